// The user's tasks from the tool output, a task chosen as widget state, a
// Refresh button calling a tool through window.openai, in the host's theme.
import { useEffect, useState } from "react";
import { Badge } from "@openai/apps-sdk-ui/components/Badge";
import { Button } from "@openai/apps-sdk-ui/components/Button";
import { applyDocumentTheme } from "@openai/apps-sdk-ui/theme";
import { useOpenAiGlobal, useWidgetState } from "./openai.js";

export function App() {
  const output = useOpenAiGlobal("toolOutput");
  const theme = useOpenAiGlobal("theme") ?? "light";
  const [state, setState] = useWidgetState({ selected: null });
  const [refreshed, setRefreshed] = useState("");
  const [tasks, setTasks] = useState(null);
  useEffect(() => applyDocumentTheme(theme === "dark" ? "dark" : "light"), [theme]);
  const shown = tasks ?? output?.tasks ?? [];
  const selected = shown.find((t) => t.id === state?.selected);

  const refresh = async () => {
    const result = await window.openai.callTool("refresh_tasks", {});
    const fresh = result.structuredContent?.tasks ?? [];
    setTasks(fresh);
    setRefreshed(`Refreshed: ${fresh.length} tasks.`);
  };

  return (
    <main className="p-4 bg-surface text-default" data-theme-shown={theme}>
      <div className="flex items-center justify-between gap-3">
        <h1 className="heading-md">Tasks</h1>
        <Badge color="secondary">{`${shown.length} tasks`}</Badge>
      </div>
      <ul className="mt-3 grid gap-2">
        {shown.map((task) => (
          <li key={task.id} className="flex items-center justify-between gap-2" data-task={task.id}>
            <span>{task.title}</span>
            <Button size="sm" variant="soft" color="secondary" data-select={task.id}
              onClick={() => setState({ selected: task.id })}>
              Select
            </Button>
          </li>
        ))}
      </ul>
      <p id="selected" className="mt-3 text-sm">
        {selected ? `Selected: ${selected.title}` : "Nothing selected."}
      </p>
      <Button id="refresh" className="mt-3" color="primary" onClick={refresh}>Refresh</Button>
      <p id="refreshed" className="mt-2 text-sm text-secondary">{refreshed}</p>
      <p id="theme" className="text-xs text-secondary">{`theme: ${theme}`}</p>
    </main>
  );
}
