// TestPki: a certificate authority made at test time with OpenSSL's API (P-256 keys), and
// certificates it signs — a server certificate for 127.0.0.1 and localhost, a client
// certificate — plus a second, unrelated CA and a client certificate of its own. Every
// file is PEM in a fresh temporary directory, removed on destruction.
#ifndef STATEWATCH_TESTS_SERVER_TLS_CERTS_H_
#define STATEWATCH_TESTS_SERVER_TLS_CERTS_H_

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "test_server.h"

namespace statewatch::testing {

class TestPki {
 public:
  TestPki() : dir_(MakeTempDir("statewatch-tls-test")) {
    EVP_PKEY* ca_key = EVP_EC_gen("P-256");
    X509* ca = Issue(ca_key, "statewatch test CA", nullptr, nullptr, Role::kCa);
    EVP_PKEY* server_key = EVP_EC_gen("P-256");
    X509* server = Issue(server_key, "statewatch test server", ca, ca_key, Role::kServer);
    EVP_PKEY* client_key = EVP_EC_gen("P-256");
    X509* client = Issue(client_key, "statewatch test client", ca, ca_key, Role::kClient);
    EVP_PKEY* other_key = EVP_EC_gen("P-256");
    X509* other = Issue(other_key, "another CA", nullptr, nullptr, Role::kCa);
    EVP_PKEY* stranger_key = EVP_EC_gen("P-256");
    X509* stranger = Issue(stranger_key, "a stranger", other, other_key, Role::kClient);
    ca_cert = Write("ca.pem", ca);
    server_cert = Write("server.pem", server);
    server_key_file = Write("server.key", server_key);
    client_cert = Write("client.pem", client);
    client_key_file = Write("client.key", client_key);
    stranger_cert = Write("stranger.pem", stranger);
    stranger_key_file = Write("stranger.key", stranger_key);
    for (X509* x : {ca, server, client, other, stranger}) X509_free(x);
    for (EVP_PKEY* k : {ca_key, server_key, client_key, other_key, stranger_key}) EVP_PKEY_free(k);
  }
  ~TestPki() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string ca_cert, server_cert, server_key_file, client_cert, client_key_file;
  std::string stranger_cert, stranger_key_file;  // signed by another CA
  const std::string& dir() const { return dir_; }

 private:
  enum class Role { kCa, kServer, kClient };

  X509* Issue(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
              Role role) {
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), ++serial_);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 30L * 24 * 3600);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, nullptr, nullptr, 0);
    auto add = [&](int nid, const char* value) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      if (ext != nullptr) {
        X509_add_ext(x, ext, -1);
        X509_EXTENSION_free(ext);
      }
    };
    add(NID_subject_key_identifier, "hash");
    if (role == Role::kCa) {
      add(NID_basic_constraints, "critical,CA:TRUE");
      add(NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
      add(NID_basic_constraints, "critical,CA:FALSE");
      add(NID_key_usage, "critical,digitalSignature");
      add(NID_authority_key_identifier, "keyid");
      add(NID_ext_key_usage, role == Role::kServer ? "serverAuth" : "clientAuth");
      if (role == Role::kServer) add(NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    }
    X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256());
    return x;
  }

  std::string Write(const std::string& name, X509* x) {
    std::string path = dir_ + "/" + name;
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f != nullptr) {
      PEM_write_X509(f, x);
      std::fclose(f);
    }
    return path;
  }
  std::string Write(const std::string& name, EVP_PKEY* key) {
    std::string path = dir_ + "/" + name;
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f != nullptr) {
      PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
      std::fclose(f);
    }
    return path;
  }

  std::string dir_;
  long serial_ = 0;
};

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_SERVER_TLS_CERTS_H_
