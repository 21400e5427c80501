// A relying party built on panva's certified `openid-client` (v6), driven
// by the Rust end-to-end tests: discovery, an authorization-code flow with
// PKCE, nonce and state, the ID token checked against the JWKS,
// introspection (signed and plain), a refresh, a revocation, introspection
// of the revoked grant's token, and a refresh with the revoked token.
//
// Usage: node relying_party.mjs <issuer> <client_id> <client_secret> <redirect_uri> <id_token_alg>
// Prints {"authorize": url} and reads the callback URL the browser was sent
// to on one line of stdin; then prints the outcome as one line of JSON.
import * as client from 'openid-client';
import { createInterface } from 'node:readline';

const [issuer, clientId, clientSecret, redirectUri, idTokenAlg] = process.argv.slice(2);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// Introspection answers come signed (RFC 9701) with the same algorithm.
const config = await client.discovery(
  new URL(issuer),
  clientId,
  { client_secret: clientSecret, id_token_signed_response_alg: idTokenAlg, introspection_signed_response_alg: idTokenAlg },
  client.ClientSecretBasic(clientSecret),
  { execute: [client.allowInsecureRequests] },
);
// The same client asking for plain JSON introspection answers.
const plain = new client.Configuration(config.serverMetadata(), clientId, { client_secret: clientSecret }, client.ClientSecretPost(clientSecret));
client.allowInsecureRequests(plain);
const verifier = client.randomPKCECodeVerifier();
const nonce = client.randomNonce();
const state = client.randomState();
const authorize = client.buildAuthorizationUrl(config, {
  redirect_uri: redirectUri,
  scope: 'openid profile',
  code_challenge: await client.calculatePKCECodeChallenge(verifier),
  code_challenge_method: 'S256',
  nonce,
  state,
});
console.log(JSON.stringify({ authorize: authorize.href }));

const callback = (await lines.next()).value;
const tokens = await client.authorizationCodeGrant(config, new URL(callback), {
  pkceCodeVerifier: verifier,
  expectedNonce: nonce,
  expectedState: state,
  idTokenExpected: true,
});
const header = JSON.parse(Buffer.from(tokens.id_token.split('.')[0], 'base64url').toString());
const introspected = await client.tokenIntrospection(config, tokens.access_token);
const introspectedPlain = await client.tokenIntrospection(plain, tokens.access_token);
const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
await client.tokenRevocation(config, refreshed.refresh_token);
const afterRevocationIntrospected = await client.tokenIntrospection(config, refreshed.access_token);
let afterRevocation = 'accepted';
try {
  await client.refreshTokenGrant(config, refreshed.refresh_token);
} catch (error) {
  afterRevocation = error.error ?? error.code ?? String(error);
}
console.log(JSON.stringify({
  sub: tokens.claims().sub,
  idTokenAlg: header.alg,
  refreshedIdTokenAlg: refreshed.id_token ? JSON.parse(Buffer.from(refreshed.id_token.split('.')[0], 'base64url').toString()).alg : null,
  afterRevocation,
  introspected: { active: introspected.active, client_id: introspected.client_id, sub: introspected.sub },
  introspectedPlain: { active: introspectedPlain.active, token_type: introspectedPlain.token_type },
  afterRevocationIntrospected,
}));
process.exit(0);
