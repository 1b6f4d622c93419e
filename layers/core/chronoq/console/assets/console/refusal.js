// What the console says when the API refuses the token (401): the likely cause, read from the
// token itself (its issuer and expiry, decoded, not verified), and how to get a fresh one.

/** The issuer of the tokens chronoq local mints (resources.LOCAL_TOKEN_ISSUER). */
export const LOCAL_ISSUER = "chronoq-local";

/** Where chronoq local keeps its data, and how to point chronoq token at it. */
const FRESH_LOCAL =
  "Get a fresh one with \"chronoq token NAME\", run in the directory chronoq local runs in" +
  " (it keeps its data in .chronoq there, or in its --data-dir / $CHRONOQ_DATA_DIR: give" +
  " chronoq token the same), or use the admin token chronoq local printed at start-up.";

/**
 * The sentence shown on the sign-in page after a 401, for a token with these ``claims``
 * (null: none, or not a JWT), at ``nowMs`` (milliseconds since the epoch).
 */
export function refusalWords(claims, nowMs) {
  if (!claims) return "Your token was refused: it is missing or not a token. Sign in again.";
  const local = claims.iss === LOCAL_ISSUER;
  if (typeof claims.exp === "number" && claims.exp * 1000 <= nowMs) {
    const when = new Date(claims.exp * 1000).toISOString().replace(".000Z", "Z");
    return `Your token expired at ${when}. ` + (local ? FRESH_LOCAL : "Sign in again.");
  }
  if (local) {
    return (
      "Your token was refused: it is not signed with this chronoq local's secret. It was most" +
      " likely made by chronoq token for another data directory (e.g. run outside the" +
      " directory chronoq local runs in, which made a .chronoq of its own there), or before" +
      " that data directory was replaced. " + FRESH_LOCAL
    );
  }
  return (
    "Your token was refused: it is not valid for this API (e.g. an ID token of another user" +
    " pool or app client, or one chronoq local made). Sign in again."
  );
}
