// A widget in the style of the Apps SDK examples: React, Apps SDK UI and
// window.openai only (no MCP Apps code).
import "./main.css";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App.jsx";

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
