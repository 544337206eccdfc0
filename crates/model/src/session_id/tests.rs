use super::*;

fn http(s: Option<&str>) -> Token {
    Token {
        mount: "time".into(),
        route: Route::Http {
            upstream_session: s.map(Into::into),
        },
        owner: Owner::Open,
        host: Some(HostKind::Claude),
        started: Some(1_790_000_000_123),
        hello: None,
    }
}

#[test]
fn seal_open_round_trip() {
    let key = SessionKey::random();
    for token in [
        http(Some("4f0e-uuid")),
        http(None),
        Token {
            mount: "".into(),
            route: Route::Local {
                instance: [7; 16],
                id: u64::MAX,
            },
            owner: Owner::Anonymous,
            host: Some(HostKind::ChatGpt),
            started: None,
            hello: None,
        },
        Token {
            mount: "tasks".into(),
            route: Route::Pooled { client: 42 },
            owner: Owner::caller("https://login.example.com", "alice"),
            host: Some(HostKind::Claude),
            started: Some(7),
            hello: Some(Hello::of_initialize(Some(&serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"sampling": {}, "roots": {"listChanged": true}},
                "clientInfo": {"name": "claude-ai", "version": "0.1.0"},
            })))),
        },
        Token {
            hello: Some(Hello::default()),
            ..http(Some("with-hello"))
        },
        Token {
            host: Some(HostKind::Other),
            ..http(None)
        },
        Token {
            host: None,
            started: None,
            ..http(Some("x"))
        },
    ] {
        let id = key.seal(&token);
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_eq!(key.open(&id), Some(token));
    }
}

/// Whatever the gateway seals, it opens again: the longest upstream id
/// with the longest mount name stays within the length `open` accepts.
#[test]
fn the_longest_ids_sealed_are_opened() {
    let key = SessionKey::random();
    for len in [3100, MAX_UPSTREAM_SESSION_ID] {
        let token = Token {
            mount: "m".repeat(MAX_MOUNT_NAME),
            route: Route::Http {
                upstream_session: Some("s".repeat(len)),
            },
            owner: Owner::Caller([0xff; 32]),
            host: Some(HostKind::Other),
            started: Some(u64::MAX),
            hello: Some(Hello {
                version: "v".repeat(255),
                caps: Default::default(),
                client_name: "n".repeat(255),
                client_version: "c".repeat(255),
            }),
        };
        assert!(carries_upstream_id(&"s".repeat(len)));
        let id = key.seal(&token);
        assert!(id.len() <= MAX_SEALED_ID, "{} > {MAX_SEALED_ID}", id.len());
        assert_eq!(key.open(&id), Some(token), "{len}");
    }
    assert_eq!(MAX_SEALED_ID, 6946);
    assert!(!carries_upstream_id(
        &"s".repeat(MAX_UPSTREAM_SESSION_ID + 1)
    ));
}

/// An id sealed before ids carried the start (the same layout, eight
/// bytes shorter) opens with no start; one sealed before they carried
/// the host (one byte shorter still) opens with neither; another tail
/// does not open.
#[test]
fn ids_without_a_start_or_a_host_still_open() {
    let key = SessionKey::random();
    let seal_plain = |plain: &[u8]| {
        let nonce = [9u8; NONCE_LEN];
        let payload = Payload {
            msg: plain,
            aad: AAD,
        };
        let sealed = key.cipher.encrypt(XNonce::from_slice(&nonce), payload);
        URL_SAFE_NO_PAD.encode([&nonce[..], &sealed.unwrap()].concat())
    };
    let token = http(Some("up-1"));
    let with_hello = Token {
        hello: Some(Hello::gateway("2025-11-25")),
        ..token.clone()
    };
    let mut plain = encode(&with_hello);
    assert_eq!(key.open(&seal_plain(&plain)), Some(with_hello));
    // An id sealed before ids carried the hello.
    plain.truncate(encode(&token).len());
    assert_eq!(key.open(&seal_plain(&plain)), Some(token.clone()));
    plain.truncate(plain.len() - 8);
    let no_start = Token {
        started: None,
        ..token.clone()
    };
    assert_eq!(key.open(&seal_plain(&plain)), Some(no_start.clone()));
    assert_eq!(plain.pop(), Some(HostKind::Claude.code()));
    let old = Token {
        host: None,
        ..no_start
    };
    assert_eq!(key.open(&seal_plain(&plain)), Some(old));
    plain.extend_from_slice(&[2, 2]);
    assert_eq!(key.open(&seal_plain(&plain)), None);
}

/// An id of the first layout, which named no caller, opens as an open
/// endpoint's: a request with a token or none on an endpoint that asks for
/// one is not its owner.
#[test]
fn ids_of_the_first_layout_open_as_an_open_endpoints() {
    let key = SessionKey::random();
    let token = Token {
        hello: Some(Hello::gateway("2025-11-25")),
        ..http(Some("up-1"))
    };
    let mut plain = encode(&token);
    let owner_at = 3 + token.mount.len() + 3 + "up-1".len();
    assert_eq!(plain.remove(owner_at), 0, "the open owner's byte");
    plain[0] = VERSION_V1;
    assert_eq!(key.open(&key.seal_bytes(AAD, &plain)), Some(token));
    // An owner this layout does not know is no id.
    let mut bad = encode(&http(None));
    let owner_at = 3 + "time".len() + 1;
    bad[owner_at] = 3;
    assert_eq!(key.open(&key.seal_bytes(AAD, &bad)), None);
}

/// A caller is the same whoever computes it, and another caller (or the
/// same names split otherwise) is another.
#[test]
fn owners_name_their_caller_alone() {
    let alice = Owner::caller("https://login.example.com", "alice");
    assert_eq!(alice, Owner::caller("https://login.example.com", "alice"));
    for other in [
        Owner::caller("https://login.example.com", "bob"),
        Owner::caller("https://login.example.co", "malice"),
        Owner::caller("https://other.example.com", "alice"),
        Owner::Anonymous,
        Owner::Open,
    ] {
        assert_ne!(alice, other);
    }
    let key = SessionKey::random();
    let token = Token {
        owner: alice,
        ..http(Some("x"))
    };
    assert_eq!(key.open(&key.seal(&token)).map(|t| t.owner), Some(alice));
}

#[test]
fn ids_are_unlinkable_and_unforgeable() {
    let key = SessionKey::random();
    let a = key.seal(&http(Some("x")));
    let b = key.seal(&http(Some("x")));
    assert_ne!(a, b, "fresh nonce per id");
    let other = SessionKey::random();
    assert_eq!(other.open(&a), None, "another key cannot open it");
    let mut bytes = URL_SAFE_NO_PAD.decode(&a).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert_eq!(key.open(&URL_SAFE_NO_PAD.encode(bytes)), None);
    for junk in [
        "",
        "abc",
        "!!!!",
        &"A".repeat(5000),
        &"A".repeat(MAX_SEALED_ID + 1),
        &a[..a.len() - 2],
    ] {
        assert_eq!(key.open(junk), None);
    }
}

#[test]
fn remembered_ids_open_as_the_key_does() {
    let key = SessionKey::random();
    let opened = OpenedIds::default();
    let id = key.seal(&http(Some("u")));
    for _ in 0..2 {
        assert_eq!(opened.open(&key, &id).as_deref(), Some(&http(Some("u"))));
    }
    assert_eq!(opened.open(&key, &id[..id.len() - 1]), None);
    let other = SessionKey::random();
    assert_eq!(
        opened.open(&other, &other.seal(&http(None))).as_deref(),
        Some(&http(None))
    );
    // Full: emptied, and still right.
    for _ in 0..OPENED_MAX + 1 {
        assert!(opened.open(&key, &key.seal(&http(None))).is_some());
    }
    assert!(opened.lock().len() <= OPENED_MAX);
    assert_eq!(opened.open(&key, &id).as_deref(), Some(&http(Some("u"))));
}

#[test]
fn key_from_hex() {
    let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    let a = SessionKey::from_hex(hex).unwrap();
    let b = SessionKey::from_hex(hex).unwrap();
    assert_eq!(b.open(&a.seal(&http(None))), Some(http(None)));
    assert!(matches!(
        SessionKey::from_hex("abcd"),
        Err(KeyError::Length(4))
    ));
    assert!(SessionKey::from_hex(&"zz".repeat(32)).is_err());
}
