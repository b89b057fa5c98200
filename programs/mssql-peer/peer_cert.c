/*
 * A self-signed certificate made at startup when none is configured: a
 * real SQL Server always has one (it generates it itself), so clients that
 * ask for login-only encryption, the default of most drivers, expect the
 * TLS handshake to work.  RSA 2048, SHA-256, valid for two days, SAN
 * DNS:localhost and IP:127.0.0.1; written as PEM files for the TLS layer.
 */
#include "peer.h"

#include <stdio.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

static bool add_ext(X509 *cert, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ex) return false;
    bool ok = X509_add_ext(cert, ex, -1) == 1;
    X509_EXTENSION_free(ex);
    return ok;
}

df_errkind peer_cert_generate(const char *cert_path, const char *key_path, df_error *err) {
    EVP_PKEY *key = EVP_RSA_gen(2048);
    X509 *cert = X509_new();
    bool ok = key && cert;
    if (ok) {
        X509_set_version(cert, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(cert), (long)(df_wall_ns() / 1000000));
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
        X509_gmtime_adj(X509_getm_notAfter(cert), 2L * 86400);
        X509_set_pubkey(cert, key);
        X509_NAME *name = X509_get_subject_name(cert);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1, 0);
        X509_set_issuer_name(cert, name);
        ok = add_ext(cert, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1") &&
             add_ext(cert, NID_basic_constraints, "critical,CA:TRUE") && X509_sign(cert, key, EVP_sha256()) > 0;
    }
    FILE *cf = ok ? fopen(cert_path, "w") : NULL, *kf = ok ? fopen(key_path, "w") : NULL;
    if (ok) ok = cf && kf && PEM_write_X509(cf, cert) == 1 && PEM_write_PrivateKey(kf, key, NULL, NULL, 0, NULL, NULL) == 1;
    if (cf) fclose(cf);
    if (kf) fclose(kf);
    X509_free(cert);
    EVP_PKEY_free(key);
    return ok ? DF_OK : df_error_set(err, DF_ERR_MSSQL_TLS, "cannot generate the self-signed certificate");
}
