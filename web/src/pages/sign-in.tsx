/**
 * Sign-in: the key goes to POST /console/session once and is dropped — the form is cleared and nothing stores it;
 * the gateway's HttpOnly cookie is the session from then on.
 */
import { useState } from "preact/hooks";
import { signIn, type Session } from "../session";

export function SignIn({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const input = form.elements.namedItem("apiKey") as HTMLInputElement;
    const apiKey = input.value.trim();
    input.value = "";
    if (!apiKey) {
      setError("Enter an API key (sy_…).");
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await signIn(apiKey));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in" id="main">
      <h1>Switchyard console</h1>
      <form onSubmit={submit}>
        <label for="apiKey">API key</label>
        <input id="apiKey" name="apiKey" type="password" autoComplete="off" placeholder="sy_…" required />
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        {error && (
          <p class="problem" role="alert">
            {error}
          </p>
        )}
        <p class="hint">The key is exchanged for a short-lived session cookie; the browser does not keep it.</p>
      </form>
    </main>
  );
}
