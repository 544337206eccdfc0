use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;

fn site(overlay: &str) -> ToolSite {
    ToolSite {
        file: PathBuf::from("overlays/demo.toml"),
        line: Some(3),
        mount: "demo".into(),
        tool: "list_tasks".into(),
        key: "list_tasks".into(),
        overlay: Some(toml::from_str(overlay).unwrap()),
    }
}

fn problems(site: &ToolSite, tools: &Vec<Value>) -> Vec<String> {
    let found = findings([site], [], tools);
    found.problems.iter().map(ToString::to_string).collect()
}

#[test]
fn builtin_widget_keys_are_checked_against_the_live_output_schema() {
    let tools = vec![json!({"name": "list_tasks", "outputSchema": {
        "type": "object",
        "properties": {"tasks": {"type": "array", "items": {
            "type": "object", "properties": {"title": {"type": "string"}, "done": {"type": "boolean"}}
        }}}
    }})];
    let site = site("widget = \"builtin:table\"\n[view]\ncolumns = [\"title\", \"don\"]\n");
    assert_eq!(
        problems(&site, &tools),
        [
            "overlays/demo.toml:3: tools.list_tasks.view.columns[1]: `don` is not in the output schema's records at `/tasks`: `/` has no property `don`; did you mean `done`? (the upstream's live outputSchema)"
        ]
    );
}

#[test]
fn a_table_over_several_arrays_needs_its_data_pointer() {
    let tools = vec![json!({"name": "list_tasks", "outputSchema": {
        "type": "object",
        "properties": {
            "entities": {"type": "array", "items": {"type": "object"}},
            "relations": {"type": "array", "items": {"type": "object"}}
        }
    }})];
    let site = site("widget = \"builtin:table\"\n");
    assert_eq!(
        problems(&site, &tools),
        [
            "overlays/demo.toml:3: tools.list_tasks.view.data: missing, and the output schema has several array properties: set it to one of `/entities`, `/relations` (the upstream's live outputSchema)"
        ]
    );
}

#[test]
fn the_tools_builtin_actions_call_must_be_listed() {
    let tools = vec![
        json!({"name": "list_tasks"}),
        json!({"name": "complete_task"}),
    ];
    let site = site(
        "widget = \"builtin:list\"\n[view]\nactions = [{ label = \"Done\", tool = \"complete_tsk\" }]\nrefresh = \"list_tasks\"\n",
    );
    assert_eq!(
        problems(&site, &tools),
        [
            "overlays/demo.toml:3: tools.list_tasks.view.actions[0].tool: upstream 'demo' has no tool `complete_tsk`; did you mean `complete_task`?"
        ]
    );
}

/// An action's argument written as one pointer or text where the called
/// tool wants an array is warned about; one written as an array, or for a
/// parameter that also takes a text, is not.
#[test]
fn an_action_argument_the_called_tool_wants_as_an_array_is_warned_about() {
    let tools = vec![
        json!({"name": "list_tasks"}),
        json!({"name": "delete_entities", "inputSchema": {"type": "object", "properties": {
            "entityNames": {"type": "array", "items": {"type": "string"}},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            "ids": {"type": "array"},
            "note": {"type": ["string", "array"]},
            "reason": {"type": "string"}
        }}}),
    ];
    let site = site(
        "widget = \"builtin:list\"\n[view]\nactions = [{ label = \"Forget\", tool = \"delete_entities\", arguments = { entityNames = \"/name\", tags = \"urgent\", ids = [\"/id\"], note = \"/note\", reason = \"/why\" } }]\n",
    );
    let found = findings([&site], [], &tools);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    let warnings: Vec<String> = found.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "overlays/demo.toml:3: tools.list_tasks.view.actions[0].arguments.entityNames: `/name` sends the record's value as it is, and `delete_entities`'s input schema wants an array for `entityNames`; write [\"/name\"] to send it in an array (unless that value is an array itself)",
            "overlays/demo.toml:3: tools.list_tasks.view.actions[0].arguments.tags: `urgent` is sent as a text, and `delete_entities`'s input schema wants an array for `tags`; write [\"urgent\"]",
        ]
    );
}

/// A listing that kept only the names (what `serve` keeps of the tools it
/// does not overlay) still finds unknown tools.
#[test]
fn names_alone_find_unknown_tools() {
    struct Names(Vec<&'static str>);
    impl Listed for Names {
        fn names(&self) -> Vec<&str> {
            self.0.clone()
        }
        fn has(&self, name: &str) -> bool {
            self.0.contains(&name)
        }
        fn tool(&self, _: &str) -> Option<&Value> {
            None
        }
    }
    let site = site("title = \"Tasks\"\n");
    let listed = Names(vec!["list_task", "add_task"]);
    let found = findings([&site], [], &listed);
    assert_eq!(
        found.problems[0].reason,
        "upstream 'demo' has no tool `list_tasks`; did you mean `list_task`?"
    );
}

#[test]
fn unknown_tools_suggest_or_list() {
    let tools = vec![json!({"name": "list_tasks"}), json!({"name": "add_task"})];
    assert_eq!(
        unknown_tool("demo", "list_task", &tools),
        "upstream 'demo' has no tool `list_task`; did you mean `list_tasks`?"
    );
    assert_eq!(
        unknown_tool("demo", "weather", &tools),
        "upstream 'demo' has no tool `weather` (its tools: `list_tasks`, `add_task`)"
    );
}
