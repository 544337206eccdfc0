// Renders the structuredContent of ui/notifications/tool-result.
window.addEventListener("message", (event) => {
  const message = event.data;
  if (message?.method === "ui/notifications/tool-result") {
    document.getElementById("now").textContent = message.params.structuredContent?.datetime ?? "?";
  }
});
