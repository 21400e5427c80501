// A relying party built on panva's certified `openid-client` (v6) that
// authenticates with a client assertion instead of a secret sent as it is:
// `private_key_jwt` (its own key pair, made here) or `client_secret_jwt`.
// Driven by the Rust end-to-end tests: discovery, an authorization-code
// flow with PKCE, nonce and state, the ID token and the signed userinfo
// answer checked against the JWKS, signed introspection, a refresh, a
// revocation, introspection of the revoked grant's token, and a refresh
// with the revoked token.
//
// Usage: node key_client.mjs <issuer> <client_id> <redirect_uri> <method> <key_alg> <token_alg> [requests]
//   method: private_key_jwt, client_secret_jwt or self_signed_tls_client_auth
//   (the certificate the test made and registered, sent as with `+mtls`);
//   key_alg: ES256, PS256 or Ed25519
//   (the client's own key); token_alg: the algorithm Portico signs the
//   client's ID tokens, userinfo and introspection answers with; requests:
//   how the authorization request travels: `plain` (the default, in the
//   query), `par` (pushed, RFC 9126), `jar` (a request object signed with
//   the client's key, RFC 9101) or `par+jar` (a request object, pushed);
//   with `+dpop` the tokens are bound to a DPoP key (RFC 9449) of the
//   relying party's, and every token request and userinfo call carries a
//   proof of it; with `+jarm` the authorization response comes back
//   signed (`response_mode=jwt`, checked by openid-client against the
//   JWKS and token_alg); with `+mtls` every request to Portico carries the
//   client certificate the test made, as a TLS terminator in front would
//   pass it (the `x-client-cert` header, URL-encoded PEM), and the tokens
//   are bound to it (RFC 8705); `+tls` is the same over Portico's own
//   mutual-TLS listener, the certificate in the handshake and the requests
//   sent to discovery's `mtls_endpoint_aliases`; `fapi2` or `fapi-ru` among the modifiers
//   registers the client under that security profile instead of its own
//   rules (the test's side); a `fapi2` client discovers Portico through
//   the RFC 8414 document (`/.well-known/oauth-authorization-server`).
// Prints {"jwk": <public JWK or null>}; reads one line of JSON:
// {"secret": <the client_secret_jwt secret or null>, "certificate": <the
// escaped PEM or null>, "tls": <{cert, key, ca} PEMs or null>} for a client the test
// registered, or {"initialAccessToken": …} to register itself (RFC 7591,
// then reading and updating the registration, RFC 7592); prints
// {"authorize": url} and reads the callback URL the browser was sent to;
// then prints the outcome as one line of JSON (deleting a registration it
// made at the end).
import * as client from 'openid-client';
import { createInterface } from 'node:readline';

const [issuer, clientId, redirectUri, method, keyAlg, tokenAlg, requests = 'plain'] = process.argv.slice(2);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

let keys = null;
let publicJwk = null;
if (method === 'private_key_jwt') {
  const algorithm = {
    PS256: { name: 'RSA-PSS', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    ES256: { name: 'ECDSA', namedCurve: 'P-256' },
    // openid-client signs with an Ed25519 key under the RFC 9864 name.
    Ed25519: { name: 'Ed25519' },
  }[keyAlg];
  keys = await crypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  publicJwk = { ...(await crypto.subtle.exportKey('jwk', keys.publicKey)), kid: 'rp-key-1', use: 'sig', alg: keyAlg };
  delete publicJwk.key_ops;
  delete publicJwk.ext;
}
console.log(JSON.stringify({ jwk: publicJwk }));
const { secret, initialAccessToken, certificate, tls } = JSON.parse((await lines.next()).value);
const modifiers = requests.split('+');

const algs = {
  id_token_signed_response_alg: tokenAlg,
  userinfo_signed_response_alg: tokenAlg,
  introspection_signed_response_alg: tokenAlg,
  authorization_signed_response_alg: tokenAlg,
  // `+tls`: the token, PAR, userinfo, introspection and revocation
  // requests go to discovery's mtls_endpoint_aliases.
  ...(tls ? { use_mtls_endpoint_aliases: true } : {}),
};
let config;
let registration = null;
if (initialAccessToken) {
  config = await client.dynamicClientRegistration(
    new URL(issuer),
    {
      redirect_uris: [redirectUri],
      client_name: 'Relying party',
      token_endpoint_auth_method: method,
      // OpenID Connect Registration §2: every assertion in this one algorithm.
      token_endpoint_auth_signing_alg: keyAlg,
      jwks: { keys: [publicJwk] },
      access_token_signed_response_alg: tokenAlg,
      ...algs,
    },
    client.PrivateKeyJwt({ key: keys.privateKey, kid: 'rp-key-1' }),
    { initialAccessToken, execute: [client.allowInsecureRequests] },
  );
  const metadata = config.clientMetadata();
  const manage = (options) => fetch(metadata.registration_client_uri, {
    ...options,
    headers: { authorization: `Bearer ${metadata.registration_access_token}`, 'content-type': 'application/json' },
  });
  const read = await manage({ method: 'GET' });
  const current = await read.json();
  // The read answer as it came (RFC 7592 §3 members included) is the
  // replacement's body, as certification suites send it.
  const updated = await manage({ method: 'PUT', body: JSON.stringify({ ...current, client_name: 'Relying party, renamed' }) });
  const replaced = await updated.json();
  const held = (answer) => answer.registration_access_token === metadata.registration_access_token
    && answer.registration_client_uri === metadata.registration_client_uri;
  registration = {
    clientId: metadata.client_id,
    assertionAlg: metadata.token_endpoint_auth_signing_alg,
    readStatus: read.status,
    readName: current.client_name,
    readHolds: held(current),
    updateStatus: updated.status,
    updatedName: replaced.client_name,
    updateHolds: held(replaced),
    manage,
  };
} else {
  const auth = {
    private_key_jwt: () => client.PrivateKeyJwt({ key: keys.privateKey, kid: 'rp-key-1' }),
    client_secret_jwt: () => client.ClientSecretJwt(secret),
    self_signed_tls_client_auth: () => client.TlsClientAuth(),
  }[method]();
  // A FAPI 2.0 client reads the RFC 8414 document; the others OpenID
  // Connect Discovery's.
  const algorithm = modifiers.includes('fapi2') ? 'oauth2' : 'oidc';
  config = await client.discovery(new URL(issuer), clientId, algs, auth, { algorithm, execute: [client.allowInsecureRequests] });
}
if (tls) {
  // Portico's own mutual-TLS listener: the client certificate in the TLS
  // handshake, through undici (Node's fetch takes no client certificate).
  const { Agent, fetch: tlsFetch } = await import('undici');
  const dispatcher = new Agent({ connect: { cert: tls.cert, key: tls.key, ca: tls.ca } });
  config[client.customFetch] = (url, options) => tlsFetch(url, { ...options, dispatcher });
} else if (certificate) {
  // What the TLS terminator in front adds to each request of this client.
  config[client.customFetch] = (url, options) => {
    const headers = new Headers(options.headers);
    headers.set('x-client-cert', certificate);
    return fetch(url, { ...options, headers });
  };
}
const verifier = client.randomPKCECodeVerifier();
const nonce = client.randomNonce();
const state = client.randomState();
const dpop = modifiers.includes('dpop')
  ? { DPoP: client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256')) }
  : {};
if (modifiers.includes('jarm')) {
  client.useJwtResponseMode(config);
}
const travel = modifiers.filter((m) => !['dpop', 'jarm', 'mtls', 'tls', 'fapi2', 'fapi-ru'].includes(m)).join('+');
const parameters = {
  redirect_uri: redirectUri,
  scope: 'openid profile',
  code_challenge: await client.calculatePKCECodeChallenge(verifier),
  code_challenge_method: 'S256',
  nonce,
  state,
};
// A refusal Portico answers (a rule of the client's security profile
// broken on purpose): printed as {"refused": {stage, error, description}},
// and the run ends.
const refusedAt = async (stage, step) => {
  try {
    return await step();
  } catch (error) {
    const refused = { stage, error: error.error ?? error.code ?? String(error), description: error.error_description ?? error.message };
    console.log(JSON.stringify({ refused }));
    process.exit(0);
  }
};
let authorize;
await refusedAt('request', async () => {
if (travel === 'plain') {
  authorize = client.buildAuthorizationUrl(config, parameters);
} else if (travel === 'par') {
  authorize = await client.buildAuthorizationUrlWithPAR(config, parameters, dpop);
} else {
  const signed = await client.buildAuthorizationUrlWithJAR(config, parameters, { key: keys.privateKey, kid: 'rp-key-1' });
  authorize = travel === 'jar' ? signed : await client.buildAuthorizationUrlWithPAR(config, signed.searchParams, dpop);
}
});
console.log(JSON.stringify({ authorize: authorize.href }));

const callback = (await lines.next()).value;
const answered = new URL(callback).searchParams;
// A signed (JARM) answer carries an error inside.
const inside = answered.has('response')
  ? JSON.parse(Buffer.from(answered.get('response').split('.')[1], 'base64url').toString())
  : {};
const stage = answered.has('error') || inside.error ? 'authorize' : 'token';
const tokens = await refusedAt(stage, () => client.authorizationCodeGrant(config, new URL(callback), {
  pkceCodeVerifier: verifier,
  expectedNonce: nonce,
  expectedState: state,
  idTokenExpected: true,
}, undefined, dpop));
const alg = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString()).alg;
const sub = tokens.claims().sub;
const userinfo = await client.fetchUserInfo(config, tokens.access_token, sub, dpop);
const introspected = await client.tokenIntrospection(config, tokens.access_token);
const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, undefined, dpop);
await client.tokenRevocation(config, refreshed.refresh_token);
const afterRevocationIntrospected = await client.tokenIntrospection(config, refreshed.access_token);
let afterRevocation = 'accepted';
try {
  await client.refreshTokenGrant(config, refreshed.refresh_token, undefined, dpop);
} catch (error) {
  afterRevocation = error.error ?? error.code ?? String(error);
}
let registered = null;
if (registration) {
  const deleted = await registration.manage({ method: 'DELETE' });
  const afterDelete = await registration.manage({ method: 'GET' });
  const { manage, ...outcome } = registration;
  registered = { ...outcome, deleteStatus: deleted.status, readAfterDeleteStatus: afterDelete.status };
}
console.log(JSON.stringify({
  registered,
  sub,
  tokenType: tokens.token_type,
  refreshedTokenType: refreshed.token_type,
  refreshRotated: refreshed.refresh_token !== tokens.refresh_token,
  idTokenAlg: alg(tokens.id_token),
  accessTokenAlg: alg(tokens.access_token),
  refreshedIdTokenAlg: refreshed.id_token ? alg(refreshed.id_token) : null,
  userinfoSub: userinfo.sub,
  introspected: { active: introspected.active, client_id: introspected.client_id, sub: introspected.sub },
  introspectedCnf: introspected.cnf ?? null,
  afterRevocation,
  afterRevocationIntrospected,
}));
process.exit(0);
