// Package testjwt makes throwaway signing keys, the JWTs they sign and
// the JWKS files that list them, for tests of bearer JWTs.
//
//	k := testjwt.NewKey(t, "k1", jose.ES256)
//	testjwt.WriteJWKS(t, filepath.Join(dir, "jwks.json"), k)
//	token := k.Sign(t, testjwt.Claims("https://idp.test", "baton", "team-a", time.Hour))
//
// It also makes the tokens a verifier must refuse: unsigned (alg none),
// HMAC-signed, and tampered after signing.
package testjwt
