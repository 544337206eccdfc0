//! `init`: stubs `check` accepts over every transport, never replacing a
//! file unasked, and the hint it ends with runs as printed.

use super::*;

#[tokio::test]
async fn init_writes_a_stub_for_the_demo_that_check_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    let out = run(root, &["init", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.starts_with(
            "wrote overlays/demo.toml: 4 tool stubs of upstream 'demo' (task-list-demo "
        ),
        "{both}"
    );
    assert!(
        stdout.contains("wrote overlays/schema/overlay.schema.json"),
        "{both}"
    );
    let stub = std::fs::read_to_string(root.join("overlays/demo.toml")).unwrap();
    assert!(
        stub.starts_with("#:schema ./schema/overlay.schema.json\n"),
        "{stub}"
    );
    for tool in ["list_tasks", "add_task", "complete_task", "refresh_tasks"] {
        assert!(stub.contains(&format!("\n[tools.{tool}]\n")), "{stub}");
    }
    assert!(
        stub.contains("\n# List all tasks with their id, title and completion state.\n"),
        "{stub}"
    );
    // The stubs set no annotations yet: the app directory rule warns.
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("overlays OK: 1 overlay file, 4 tools overlaid")),
        "{both}"
    );
}

#[tokio::test]
async fn init_refuses_to_overwrite_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    let mine = "# my own overlays\n";
    write(root.join("overlays/demo.toml"), mine);
    let out = run(root, &["init", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{both}");
    assert_eq!(stdout, "", "{both}");
    assert!(
        text(&out.stderr).contains("overlays/demo.toml exists; not overwritten (use --force"),
        "{both}"
    );
    let kept = std::fs::read_to_string(root.join("overlays/demo.toml")).unwrap();
    assert_eq!(kept, mine);
    assert!(
        !root.join("overlays/schema").exists(),
        "a refusal writes nothing"
    );

    let out = run(root, &["init", "--config", "gw.toml", "--force"]).await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let replaced = std::fs::read_to_string(root.join("overlays/demo.toml")).unwrap();
    assert!(replaced.contains("[tools.list_tasks]"), "{replaced}");
}

#[tokio::test]
async fn init_leaves_out_tools_another_file_overlays() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root.join("gw.toml"),
        &format!("{}{LIMITS}", demo_upstream("demo")),
    );
    write(
        root.join("overlays/tasks.toml"),
        "upstream = \"demo\"\n\n[tools.list_tasks]\ntitle = \"Tasks\"\n",
    );
    let out = run(root, &["init", "--config", "gw.toml", "--name", "demo"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.contains("3 tool stubs"), "{both}");
    let stub = std::fs::read_to_string(root.join("overlays/demo.toml")).unwrap();
    assert!(!stub.contains("[tools.list_tasks]"), "{stub}");
    assert!(
        stub.contains("# list_tasks: overlaid in overlays/tasks.toml"),
        "{stub}"
    );
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", streams(&out).1);
}

/// `init` then `check` through every transport: the fixture server over
/// streamable HTTP (SSE and JSON responses), legacy HTTP+SSE and stdio.
#[tokio::test(flavor = "multi_thread")]
async fn init_and_check_over_every_transport() {
    let stateful = upstreams::start_http(HttpFlavor::StatefulSse)
        .await
        .unwrap();
    let json = upstreams::start_http(HttpFlavor::StatelessJson)
        .await
        .unwrap();
    let legacy = upstreams::start_sse().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let config = format!(
        "[[upstream]]\nname = \"stateful\"\nurl = \"{}\"\n\n\
         [[upstream]]\nname = \"json\"\nurl = \"{}\"\n\n\
         [[upstream]]\nname = \"legacy\"\nsse_url = \"{}\"\n\n\
         [[upstream]]\nname = \"stdio\"\ncommand = {:?}\n\n{LIMITS}",
        stateful.url,
        json.url,
        legacy.url,
        upstreams::STDIO_COMMAND
    );
    write(root.join("gw.toml"), &config);
    let out = run(root, &["init", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    for name in ["stateful", "json", "legacy", "stdio"] {
        assert!(
            stdout.contains(&format!("wrote overlays/{name}.toml: ")),
            "{name}\n{both}"
        );
        let stub = std::fs::read_to_string(root.join(format!("overlays/{name}.toml"))).unwrap();
        assert!(stub.contains("\n[tools.echo]\n"), "{name}: {stub}");
    }
    let out = run(root, &["check", "--config", "gw.toml"]).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("overlays OK: 4 overlay files"),
        "{both}"
    );
    for name in ["stateful", "json", "legacy", "stdio"] {
        assert!(summary.contains(&format!("'{name}' (")), "{name}\n{both}");
    }
}

/// `init --upstream URL` is the upstream at that URL, as for `serve` and
/// `check` (no longer a name: that is `--name`), and the command `init` ends
/// with, copied as it is, checks what it wrote: stdio and HTTP upstreams.
#[tokio::test(flavor = "multi_thread")]
async fn init_takes_the_upstream_as_serve_does_and_its_hint_runs_as_printed() {
    let web = upstreams::start_http(HttpFlavor::StatelessJson)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root.join("quick.toml"), LIMITS);

    let init = format!(
        "mcp-ui-gateway init --config quick.toml --overlays 'my stubs' --upstream {} --name web",
        web.url
    );
    let out = shell(root, &init).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(stdout.starts_with("wrote my stubs/web.toml: "), "{both}");
    let hint = line_starting(&text(&out.stderr), "next: edit the stubs, then run `")
        .expect("a closing hint");
    let check = hint
        .trim_start_matches("next: edit the stubs, then run `")
        .trim_end_matches('`');
    assert_eq!(
        check,
        format!(
            "mcp-ui-gateway check --config quick.toml --overlays 'my stubs' --name web --upstream {}",
            web.url
        )
    );
    let out = shell(root, check).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.contains("checked against upstream 'web' ("),
        "{both}"
    );

    // A stdio server: the hint repeats its command line.
    let out = run(
        root,
        &[
            "init",
            "--overlays",
            "tasks",
            "--name",
            "tasks",
            "--",
            BIN,
            "demo-server",
        ],
    )
    .await;
    let (_, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    let hint = line_starting(&text(&out.stderr), "next: ").expect("a closing hint");
    let check = hint
        .trim_start_matches("next: edit the stubs, then run `")
        .trim_end_matches('`');
    assert!(
        check.starts_with("mcp-ui-gateway check --overlays tasks --name tasks -- ")
            && check.ends_with(" demo-server"),
        "{check}"
    );
    let out = shell(root, check).await;
    let (stdout, both) = streams(&out);
    assert_eq!(out.status.code(), Some(0), "{both}");
    assert!(
        stdout.contains("checked against upstream 'tasks' (4 tools)"),
        "{both}"
    );

    // A name where the URL belongs: a usage error that says which flag.
    let old_init = ["init", "--upstream", "demo", "--", BIN, "demo-server"];
    for args in [
        &["init", "--upstream", "demo"][..],
        &["check", "--upstream", "demo"],
        &["serve", "--upstream", "demo"],
        &old_init,
    ] {
        let command = args.join(" ");
        let out = run(root, args).await;
        let (_, both) = streams(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {both}");
        assert!(
            text(&out.stderr).contains(
                "--upstream takes the URL of an upstream (e.g. http://127.0.0.1:3001/mcp), not \"demo\"; to name the upstream, or to pick a configured one, use --name demo"
            ),
            "{command}: {both}"
        );
    }
}
