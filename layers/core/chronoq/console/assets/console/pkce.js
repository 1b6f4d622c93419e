// Signing in through Cognito's hosted UI with the authorization code grant and PKCE (RFC 7636).
// The console has no server side: the page makes a one-time secret (the verifier), sends its
// SHA-256 (the challenge) with the sign-in request, and redeems the code it gets back at the
// hosted UI's token endpoint with the verifier itself. The app client is public (no secret);
// a code intercepted on its way back is useless without the verifier, which never left the tab.

/** Where the verifier and the request's state wait for the answer (this tab only). */
export const PENDING_KEY = "chronoq.pkce";
export const SCOPE = "openid email";

/** Bytes as base64url without padding. */
export function base64url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A new verifier: 32 random bytes, 43 characters. */
export function newSecret(crypto = globalThis.crypto) {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The S256 challenge of a verifier. */
export async function challengeOf(verifier, crypto = globalThis.crypto) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(digest);
}

/** The hosted UI's sign-in address for `cognito` ({domain, client_id}), coming back to
 * `redirectUri`; the verifier and state are kept in `storage` for the answer. */
export async function authorizeUrl(cognito, redirectUri, storage, crypto = globalThis.crypto) {
  const verifier = newSecret(crypto);
  const state = newSecret(crypto);
  storage.setItem(PENDING_KEY, JSON.stringify({ verifier, state }));
  const query = new URLSearchParams({
    response_type: "code",
    client_id: cognito.client_id,
    redirect_uri: redirectUri,
    scope: SCOPE,
    state,
    code_challenge: await challengeOf(verifier, crypto),
    code_challenge_method: "S256",
  });
  return `https://${cognito.domain}/oauth2/authorize?${query}`;
}

/** The ID token the hosted UI's answer (`search`: the page's query, `?code=…&state=…`) is
 * worth, redeemed at the token endpoint with the kept verifier; null when the page was not
 * opened by such an answer. Throws when the answer is not the one this tab asked for. */
export async function redeem(cognito, redirectUri, search, storage, fetchFn = globalThis.fetch) {
  const params = new URLSearchParams(search);
  const code = params.get("code");
  if (!code) return null;
  const pending = JSON.parse(storage.getItem(PENDING_KEY) || "null");
  storage.removeItem(PENDING_KEY); // a code is redeemed once
  if (!pending || params.get("state") !== pending.state) {
    throw new Error("That sign-in answer was not asked for by this page: sign in again.");
  }
  const answer = await fetchFn(`https://${cognito.domain}/oauth2/token`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      client_id: cognito.client_id,
      code,
      redirect_uri: redirectUri,
      code_verifier: pending.verifier,
    }).toString(),
  });
  if (!answer.ok) throw new Error(`Cognito refused the sign-in (HTTP ${answer.status}): sign in again.`);
  const tokens = await answer.json();
  if (!tokens.id_token) throw new Error("Cognito's answer had no ID token: sign in again.");
  return tokens.id_token;
}
