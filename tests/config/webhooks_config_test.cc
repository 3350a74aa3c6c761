// The `webhooks` section of the configuration file (config/webhooks_config.h).
#include <gtest/gtest.h>

#include "config/config_file.h"
#include "status_matchers.h"

namespace statewatch::tools {
namespace {

TEST(WebhooksConfigTest, EveryKeyIsApplied) {
  DaemonConfig c;
  ASSERT_OK(ApplyConfigText(R"({"webhooks": {"enabled": false, "maxRetryMs": 60000,
      "attemptTimeoutMs": 2000, "initialBackoffMs": 50, "maxBackoffMs": 800, "jitterSeed": 9,
      "allowHttp": true, "allowPrivateNetworks": true, "maxOutbox": 7, "scanIntervalMs": 250,
      "concurrency": 2}})",
                            &c));
  EXPECT_FALSE(c.webhooks.enabled);
  EXPECT_EQ(c.webhooks.max_retry_ms, 60000);
  EXPECT_EQ(c.webhooks.attempt_timeout_ms, 2000);
  EXPECT_EQ(c.webhooks.initial_backoff_ms, 50);
  EXPECT_EQ(c.webhooks.max_backoff_ms, 800);
  EXPECT_EQ(c.webhooks.jitter_seed, 9u);
  EXPECT_TRUE(c.webhooks.allow_http);
  EXPECT_TRUE(c.webhooks.allow_private_networks);
  EXPECT_EQ(c.webhooks.max_outbox, 7u);
  EXPECT_EQ(c.webhooks.scan_interval_ms, 250);
  EXPECT_EQ(c.webhooks.concurrency, 2);
}

TEST(WebhooksConfigTest, DefaultsAreSafe) {
  DaemonConfig c;
  ASSERT_OK(ApplyConfigText("{}", &c));
  EXPECT_TRUE(c.webhooks.enabled);
  EXPECT_FALSE(c.webhooks.allow_http);
  EXPECT_FALSE(c.webhooks.allow_private_networks);
  EXPECT_GT(c.webhooks.max_outbox, 0u);
}

TEST(WebhooksConfigTest, BadValuesAreRefusedNamingTheirPath) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& k : {
           Case{R"({"webhooks": {"maxRetrys": 1}})", "unknown key webhooks.maxRetrys"},
           Case{R"({"webhooks": {"allowHttp": "yes"}})", "webhooks.allowHttp must be true or false"},
           Case{R"({"webhooks": {"attemptTimeoutMs": 5}})",
                "webhooks.attemptTimeoutMs must be an integer from 100"},
           Case{R"({"webhooks": {"concurrency": 0}})", "webhooks.concurrency must be an integer"},
           Case{R"({"webhooks": {"initialBackoffMs": 500, "maxBackoffMs": 100}})",
                "webhooks.maxBackoffMs must not be below webhooks.initialBackoffMs"},
           Case{R"({"webhooks": []})", "webhooks must be an object"},
       }) {
    DaemonConfig c;
    Status s = ApplyConfigText(k.text, &c);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << k.text;
    EXPECT_NE(s.message().find(k.message), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace statewatch::tools
