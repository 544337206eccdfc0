// A React widget as Vite builds it: one entry chunk, a lazily loaded component in
// its own chunk, a stylesheet with a web font, and an image too large to inline.
// It connects to the host over the MCP Apps bridge and calls a tool from a button.
import { createElement as h, lazy, Suspense, useState } from "react";
import { createRoot } from "react-dom/client";
import { App } from "@modelcontextprotocol/ext-apps";
import "./style.css";

const Checks = lazy(() => import("./Checks.js"));
const app = new App({ name: "vite-app", version: "1.0.0" }, {});

function Widget() {
  const [called, setCalled] = useState("");
  const call = async () => {
    const result = await app.callServerTool({ name: "list_tasks", arguments: {} });
    setCalled(result.content?.[0]?.text ?? "(no text)");
  };
  return h(
    "main",
    null,
    h("h1", null, "Vite widget"),
    h(Suspense, { fallback: h("p", null, "loading…") }, h(Checks)),
    h("button", { id: "call", onClick: call }, "Call list_tasks"),
    h("pre", { id: "called" }, called),
  );
}

createRoot(document.getElementById("root")).render(h(Widget));
app.connect().catch((e) => console.error("bridge", e));
