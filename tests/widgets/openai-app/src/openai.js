// The hooks of the Apps SDK examples: window.openai's globals as React state,
// updated on the `openai:set_globals` event the host fires.
import { useCallback, useSyncExternalStore } from "react";

const SET_GLOBALS = "openai:set_globals";

export function useOpenAiGlobal(key) {
  return useSyncExternalStore(
    (onChange) => {
      const listener = (event) => {
        if (event.detail?.globals?.[key] !== undefined) onChange();
      };
      window.addEventListener(SET_GLOBALS, listener, { passive: true });
      return () => window.removeEventListener(SET_GLOBALS, listener);
    },
    () => window.openai?.[key] ?? null,
  );
}

// Widget state kept by the host: shown to the model, restored on a remount.
export function useWidgetState(initial) {
  const state = useOpenAiGlobal("widgetState") ?? initial;
  const setState = useCallback((next) => {
    window.openai?.setWidgetState(next);
  }, []);
  return [state, setState];
}
