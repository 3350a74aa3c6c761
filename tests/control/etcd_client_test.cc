// EtcdClient against a real etcd (/usr/bin/etcd, one member on free loopback ports, started
// once for the suite): keys and values round-trip (binary too), ranges come back in key
// order with their revisions, transactions compare create/mod revisions, values and leases,
// a revoked lease takes its keys with it, and a call skips a member that does not answer.
// Each test writes under its own key prefix. Without /usr/bin/etcd the etcd tests skip.
#include "control/etcd_client.h"

#include <string>
#include <thread>
#include <vector>

#include "control/etcd_fixture.h"
#include "net/http_client.h"
#include "status_matchers.h"

namespace statewatch::control {
namespace {

using EtcdClientTest = EtcdFixture;

TEST_F(EtcdClientTest, PutGetAndRangeByPrefix) {
  const std::string p = "/t/range/";
  const std::string binary("\0\xff\x01=+/", 6);
  auto r1 = client_->Put(p + "b", "two");
  ASSERT_OK(r1);
  auto r2 = client_->Put(p + "a", binary);
  ASSERT_OK(r2);
  auto r3 = client_->Put(p + "c", "");
  ASSERT_OK(r3);
  ASSERT_OK(client_->Put("/t/range0", "a sibling outside the prefix"));
  EXPECT_LT(*r1, *r2);
  EXPECT_LT(*r2, *r3);

  auto a = client_->Get(p + "a");
  ASSERT_OK(a);
  EXPECT_EQ(a->key, p + "a");
  EXPECT_EQ(a->value, binary);
  EXPECT_EQ(a->create_revision, *r2);
  EXPECT_EQ(a->mod_revision, *r2);
  EXPECT_EQ(a->version, 1);
  EXPECT_EQ(a->lease, 0);

  auto r4 = client_->Put(p + "b", "two again");
  ASSERT_OK(r4);
  auto range = client_->Range(p);
  ASSERT_OK(range);
  ASSERT_EQ(range->kvs.size(), 3u);
  EXPECT_EQ(range->kvs[0].key, p + "a");
  EXPECT_EQ(range->kvs[1].key, p + "b");
  EXPECT_EQ(range->kvs[2].key, p + "c");
  EXPECT_EQ(range->kvs[0].value, binary);
  EXPECT_EQ(range->kvs[1].value, "two again");
  EXPECT_EQ(range->kvs[1].create_revision, *r1);
  EXPECT_EQ(range->kvs[1].mod_revision, *r4);
  EXPECT_EQ(range->kvs[1].version, 2);
  EXPECT_EQ(range->kvs[2].value, "");
  EXPECT_GE(range->revision, *r4);

  auto empty = client_->Range("/t/range/none/");
  ASSERT_OK(empty);
  EXPECT_TRUE(empty->kvs.empty());
  EXPECT_GE(empty->revision, *r4);

  auto missing = client_->Get(p + "missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString();
}

TEST_F(EtcdClientTest, RangeOfAPrefixEndingInFF) {
  const std::string p = "/t/ff/\xff";
  ASSERT_OK(client_->Put(p, "x"));
  ASSERT_OK(client_->Put(p + "\xff" + "y", "y"));
  ASSERT_OK(client_->Put("/t/ff0", "outside"));
  auto range = client_->Range(p);
  ASSERT_OK(range);
  ASSERT_EQ(range->kvs.size(), 2u);
  EXPECT_EQ(range->kvs[0].value, "x");
  EXPECT_EQ(range->kvs[1].value, "y");
}

TEST_F(EtcdClientTest, Delete) {
  const std::string k = "/t/delete/k";
  ASSERT_OK(client_->Put(k, "v"));
  auto deleted = client_->Delete(k);
  ASSERT_OK(deleted);
  EXPECT_EQ(*deleted, 1);
  EXPECT_TRUE(client_->Get(k).status().IsNotFound());
  auto again = client_->Delete(k);
  ASSERT_OK(again);
  EXPECT_EQ(*again, 0);
}

TEST_F(EtcdClientTest, TxnCreateIfAbsent) {
  const std::string k = "/t/txn-create/owner";
  const std::string lost = "/t/txn-create/lost";
  std::vector<Compare> absent = {{k, Compare::Target::kCreateRevision, 0, "", 0}};
  auto first = client_->Txn(absent, {{TxnOp::Kind::kPut, k, "node-a", 0}},
                            {{TxnOp::Kind::kPut, lost, "node-a", 0}});
  ASSERT_OK(first);
  EXPECT_TRUE(first->succeeded);
  auto kv = client_->Get(k);
  ASSERT_OK(kv);
  EXPECT_EQ(kv->value, "node-a");
  EXPECT_EQ(kv->mod_revision, first->revision);

  auto second = client_->Txn(absent, {{TxnOp::Kind::kPut, k, "node-b", 0}},
                             {{TxnOp::Kind::kPut, lost, "node-b", 0}});
  ASSERT_OK(second);
  EXPECT_FALSE(second->succeeded);
  EXPECT_EQ(client_->Get(k)->value, "node-a");
  auto failure_ran = client_->Get(lost);
  ASSERT_OK(failure_ran);
  EXPECT_EQ(failure_ran->value, "node-b");
  EXPECT_EQ(second->revision, failure_ran->mod_revision);

  // The key's creation revision compares too.
  auto created = client_->Txn({{k, Compare::Target::kCreateRevision, kv->create_revision, "", 0}},
                              {{TxnOp::Kind::kDelete, k, "", 0}});
  ASSERT_OK(created);
  EXPECT_TRUE(created->succeeded);
  EXPECT_TRUE(client_->Get(k).status().IsNotFound());
}

TEST_F(EtcdClientTest, TxnComparesModRevisionValueAndLease) {
  const std::string k = "/t/txn-mod/k";
  auto r = client_->Put(k, "v1");
  ASSERT_OK(r);
  std::vector<Compare> unchanged = {{k, Compare::Target::kModRevision, *r, "", 0}};
  auto first = client_->Txn(unchanged, {{TxnOp::Kind::kPut, k, "v2", 0}});
  ASSERT_OK(first);
  EXPECT_TRUE(first->succeeded);
  EXPECT_GT(first->revision, *r);
  auto stale = client_->Txn(unchanged, {{TxnOp::Kind::kPut, k, "v3", 0}});
  ASSERT_OK(stale);
  EXPECT_FALSE(stale->succeeded);
  EXPECT_EQ(client_->Get(k)->value, "v2");

  auto by_value = client_->Txn({{k, Compare::Target::kValue, 0, "v2", 0}},
                               {{TxnOp::Kind::kPut, k, "v4", 0}});
  ASSERT_OK(by_value);
  EXPECT_TRUE(by_value->succeeded);
  auto wrong_value = client_->Txn({{k, Compare::Target::kValue, 0, "v2", 0}},
                                  {{TxnOp::Kind::kPut, k, "v5", 0}});
  ASSERT_OK(wrong_value);
  EXPECT_FALSE(wrong_value->succeeded);

  auto lease = client_->Grant(60);
  ASSERT_OK(lease);
  ASSERT_OK(client_->Txn({}, {{TxnOp::Kind::kPut, k, "leased", *lease}}));
  auto no_lease = client_->Txn({{k, Compare::Target::kLease, 0, "", 0}},
                               {{TxnOp::Kind::kDelete, k, "", 0}});
  ASSERT_OK(no_lease);
  EXPECT_FALSE(no_lease->succeeded);
  auto with_lease = client_->Txn({{k, Compare::Target::kLease, 0, "", *lease}},
                                 {{TxnOp::Kind::kDelete, k, "", 0}});
  ASSERT_OK(with_lease);
  EXPECT_TRUE(with_lease->succeeded);
  EXPECT_TRUE(client_->Get(k).status().IsNotFound());
  EXPECT_OK(client_->Revoke(*lease));
}

TEST_F(EtcdClientTest, LeaseKeepAliveAndRevoke) {
  const std::string k = "/t/lease/owner";
  auto lease = client_->Grant(30);
  ASSERT_OK(lease);
  EXPECT_NE(*lease, 0);
  ASSERT_OK(client_->Put(k, "node-a", *lease));
  auto kv = client_->Get(k);
  ASSERT_OK(kv);
  EXPECT_EQ(kv->lease, *lease);

  auto ttl = client_->KeepAlive(*lease);
  ASSERT_OK(ttl);
  EXPECT_GT(*ttl, 0);
  EXPECT_LE(*ttl, 30);

  ASSERT_OK(client_->Revoke(*lease));
  EXPECT_TRUE(client_->Get(k).status().IsNotFound());
  auto gone = client_->KeepAlive(*lease);
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(gone.status().IsNotFound()) << gone.status().ToString();
  EXPECT_EQ(gone.status().message(), "lease " + std::to_string(*lease) + " expired");
  Status again = client_->Revoke(*lease);
  EXPECT_TRUE(again.IsNotFound()) << again.ToString();
}

TEST_F(EtcdClientTest, AnEtcdRefusalIsFailedPreconditionNotUnreachable) {
  // A put bound to a lease etcd does not have.
  auto put = client_->Put("/t/refusal/k", "v", 12345);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), Status::Code::kFailedPrecondition) << put.status().ToString();
  EXPECT_FALSE(IsUnreachable(put.status()));
  EXPECT_NE(put.status().message().find("lease not found"), std::string::npos)
      << put.status().message();
  EXPECT_NE(put.status().message().find(url_), std::string::npos) << put.status().message();
}

TEST_F(EtcdClientTest, FailsOverFromADeadMember) {
  std::string dead = Url(FreePorts(1)[0]);
  auto client = EtcdClient::Make(EtcdOptions{{dead, url_}, 2000});
  ASSERT_OK(client);
  auto put = (*client)->Put("/t/failover/k", "v");
  ASSERT_OK(put);
  EXPECT_FALSE(IsUnreachable(put.status()));
  auto kv = (*client)->Get("/t/failover/k");
  ASSERT_OK(kv);
  EXPECT_EQ(kv->value, "v");
  EXPECT_EQ((*client)->endpoints(), (std::vector<std::string>{dead, url_}));
}

TEST(EtcdClientUnreachableTest, NoMemberAnswering) {
  std::vector<int> ports = FreePorts(2);
  std::vector<std::string> dead = {Url(ports[0]), Url(ports[1])};
  auto client = EtcdClient::Make(EtcdOptions{dead, 500});
  ASSERT_OK(client);
  auto start = std::chrono::steady_clock::now();
  auto put = (*client)->Put("k", "v");
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.status().code(), Status::Code::kIOError);
  EXPECT_TRUE(IsUnreachable(put.status())) << put.status().ToString();
  const std::string message = put.status().message();
  EXPECT_EQ(message.rfind("etcd: no member answered:", 0), 0u) << message;
  EXPECT_NE(message.find(dead[0] + ": "), std::string::npos) << message;
  EXPECT_NE(message.find(dead[1] + ": "), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

  EXPECT_FALSE(IsUnreachable(Status::OK()));
  EXPECT_FALSE(IsUnreachable(Status::IOError("disk full")));
  EXPECT_FALSE(IsUnreachable(Status::FailedPrecondition("etcd: no member answered: x")));
}

TEST(EtcdEndpointsTest, ParseEndpoints) {
  auto two = ParseEndpoints("http://a:1, http://b:2379");
  ASSERT_OK(two);
  EXPECT_EQ(*two, (std::vector<std::string>{"http://a:1", "http://b:2379"}));
  auto one = ParseEndpoints("http://[::1]:2379");
  ASSERT_OK(one);
  EXPECT_EQ(one->size(), 1u);

  struct Case {
    std::string text;
    std::string expected;  // a piece of the message
  };
  const Case cases[] = {
      {"", "entry 1"},
      {"http://a:1,,http://b:2", "entry 2"},
      {"http://a:1,", "entry 2"},
      {"https://a:1", "\"https://a:1\": not http://HOST:PORT"},
      {"http://a", "\"http://a\": not http://HOST:PORT"},
      {"http://a:0", "port \"0\""},
      {"http://a:x", "port \"x\""},
      {"http://a:1/v3", "has a path"},
  };
  for (const Case& c : cases) {
    auto parsed = ParseEndpoints(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_TRUE(parsed.status().IsInvalidArgument()) << c.text;
    EXPECT_NE(parsed.status().message().find(c.expected), std::string::npos)
        << c.text << ": " << parsed.status().message();
  }

  EXPECT_TRUE(EtcdClient::Make(EtcdOptions{}).status().IsInvalidArgument());
  EXPECT_TRUE(EtcdClient::Make(EtcdOptions{{"http://a"}, 1000}).status().IsInvalidArgument());
  EXPECT_OK(EtcdClient::Make(EtcdOptions{{"http://127.0.0.1:2379"}, 1000}));
}

}  // namespace
}  // namespace statewatch::control
