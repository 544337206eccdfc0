// Built by tests/browser/openai.rs into an overlay's widget folder, with a
// relative base, as the Apps SDK examples are built for their own server.
import { defineConfig } from "vite";
import tailwindcss from "@tailwindcss/vite";

export default defineConfig({
  base: "./",
  plugins: [tailwindcss()],
});
