// Reading the errors a user can act on, for the chat and the host alike.

/**
 * Whether a provider error says the API key is missing, wrong or not allowed: the daemon's text
 * for an HTTP error starts with its status (`401 Unauthorized: …`), and providers that answer with
 * another status still name the key.
 */
export function isAuthError(message: string): boolean {
  return /(^|\b)(401|403)\b/.test(message) || /\b(invalid|incorrect|missing)\b.{0,20}\bapi[ _-]?key\b/i.test(message)
    || /\bauthentication\b/i.test(message);
}

/** The command that fixes an authentication error. */
export const SET_API_KEY = { label: "Set API Key", command: "pi.setApiKey" } as const;
