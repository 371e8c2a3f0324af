/**
 * A self-signed certificate for `agent.test` (valid until 2126) and its key: TEST ONLY, trusted solely through the
 * guarded fetch's `ca` option in these tests. Generated with
 * `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500 -subj /CN=agent.test
 * -addext subjectAltName=DNS:agent.test`.
 */
export const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBmDCCAT6gAwIBAgIUFnBbQj0AE4ZijY0w1BbG1GvOmgEwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKYWdlbnQudGVzdDAgFw0yNjExMjkxNTA5MzNaGA8yMTI2MTEw
NTE1MDkzM1owFTETMBEGA1UEAwwKYWdlbnQudGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABIIQzgfufToPRVazo8Lg9Tb/TzAHom7StMm87MugGoUIT+dp/v7M
WjGQA4hujkpXXf2U3Xqq0EdSw5Gi8MNafCKjajBoMB0GA1UdDgQWBBR/3wY8qsY3
c1O43zFQObQr0oE6vTAfBgNVHSMEGDAWgBR/3wY8qsY3c1O43zFQObQr0oE6vTAP
BgNVHRMBAf8EBTADAQH/MBUGA1UdEQQOMAyCCmFnZW50LnRlc3QwCgYIKoZIzj0E
AwIDSAAwRQIgLwGZkTpcksTxVoPly4bsxtnzHekB0c1CCielGFNm80gCIQCzXlBG
6anlYOlzvVeYt+5e/eg2rcUa/aSbWZjc3l78Dg==
-----END CERTIFICATE-----
`;

export const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgb2pTjprW5sLlLPei
9ES+PgKffdWRFSftI7cBLtPP5IOhRANCAASCEM4H7n06D0VWs6PC4PU2/08wB6Ju
0rTJvOzLoBqFCE/naf7+zFoxkAOIbo5KV139lN16qtBHUsORovDDWnwi
-----END PRIVATE KEY-----
`;
