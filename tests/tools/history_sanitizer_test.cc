// The sessions_history cleaner on hostile transcripts: unclosed and nested tags, leaked
// template tokens, secrets in odd places, huge messages.
#include "tools/history_sanitizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace statewatch::tools {
namespace {

namespace json = boost::json;

// One input of the cleaner and what it must become; `name` names the test case.
struct TextCase {
  const char* name;
  std::string input;
  std::string expected;
};
using StripCase = TextCase;
using RedactCase = TextCase;

class StripTest : public ::testing::TestWithParam<StripCase> {};

TEST_P(StripTest, Strips) { EXPECT_EQ(StripScaffolding(GetParam().input), GetParam().expected); }

const std::string kFw = "\xEF\xBD\x9C";    // ｜
const std::string kSep = "\xE2\x96\x81";   // ▁
const std::string kFwLt = "\xEF\xBC\x9C";  // ＜
const std::string kFwGt = "\xEF\xBC\x9E";  // ＞

INSTANTIATE_TEST_SUITE_P(
    Hostile, StripTest,
    ::testing::Values(
        StripCase{"plain", "Nothing to see < here >", "Nothing to see < here >"},
        StripCase{"think", "Hello <think>secret plan</think>world", "Hello world"},
        StripCase{"nested", "a<think>x<think>y</think>z</think>b", "ab"},
        StripCase{"unclosed", "answer<thinking>never closed\nat all", "answer"},
        StripCase{"stray_close_drops_reasoning", "I reason here</think>The answer is 4.",
                  "The answer is 4."},
        StripCase{"ant_thinking", "<antThinking>hmm</antThinking>Done", "Done"},
        StripCase{"thought", "<thought>x</thought>y", "y"},
        StripCase{"attributes", "<thinking type=\"deep\">r</thinking>ok", "ok"},
        StripCase{"case", "<THINK>x</Think>y", "y"}, StripCase{"self_closing", "a<think/>b", "ab"},
        StripCase{"cut_mid_tag", "answer <tool_call", "answer"},
        StripCase{"prose_lt", "x <think about it", "x <think about it"},
        StripCase{"other_tag", "<thinker>a</thinker>", "<thinker>a</thinker>"},
        StripCase{"final_unwrapped", "<final>The answer</final>", "The answer"},
        StripCase{"memories", "<relevant-memories>\n- likes tea\n</relevant-memories>\nHi", "Hi"},
        StripCase{"memories_underscore_unclosed", "Hi\n<relevant_memories>\n- secret", "Hi"},
        StripCase{"tool_call", "Let me check.<tool_call>{\"name\":\"x\"}</tool_call>",
                  "Let me check."},
        StripCase{"tool_calls_unclosed", "Sure <tool_calls>[{\"name\":\"rm\"}", "Sure"},
        StripCase{"function_call", "a<function_call>{}</function_call>b", "ab"},
        StripCase{"function_calls_unclosed", "Sure <function_calls><invoke name=\"bash\">", "Sure"},
        StripCase{"interleaved", "<think>a<tool_call>b</think>c</tool_call>d", "cd"},
        StripCase{"minimax",
                  "Ok <minimax:tool_call>\n<invoke name=\"search\">\n<parameter "
                  "name=\"q\">x</parameter>\n</invoke>\n</minimax:tool_call> done",
                  "Ok  done"},
        StripCase{"minimax_unclosed_invoke",
                  "text <invoke name=\"x\"><parameter name=\"a\">1</parameter>", "text"},
        StripCase{"minimax_stray_closers", "</invoke></minimax:tool_call>tail", "tail"},
        StripCase{"minimax_parameter_fragment", "a<parameter name=\"p\">v</parameter>b", "ab"},
        StripCase{"scaffold_tool_call",
                  "Before\n[Tool Call: exec (ID: 1)]\nArguments: {\"cmd\":\"ls\"}\n\nAfter",
                  "Before\n\nAfter"},
        StripCase{"scaffold_tool_result", "[Tool Result for ID 1]\nfile1\nfile2\n\nDone", "Done"},
        StripCase{"scaffold_indented_historical",
                  "  [Historical context: a different model called tool \"x\"]\n\nok", "ok"},
        StripCase{"scaffold_mid_line_kept", "see [Tool Call: x] above", "see [Tool Call: x] above"},
        StripCase{"ascii_tokens", "<|im_start|>assistant\nHi<|im_end|>", "assistant\nHi"},
        StripCase{"assistant_token", "<|assistant|>Hello", "Hello"},
        StripCase{"ascii_token_multiline_kept", "a <| b\n |> c", "a <| b\n |> c"},
        StripCase{"full_width_tokens",
                  "<" + kFw + "Assistant" + kFw + ">Hello<" + kFw + "end" + kSep + "of" + kSep +
                      "sentence" + kFw + ">",
                  "Hello"},
        StripCase{"full_width_brackets", kFwLt + kFw + "User" + kFw + kFwGt + "y", "y"},
        StripCase{"deepseek_tool_calls",
                  "Call<" + kFw + "tool" + kSep + "calls" + kSep + "begin" + kFw + ">fn" + "<" +
                      kFw + "tool" + kSep + "sep" + kFw + ">{}<" + kFw + "tool" + kSep + "calls" +
                      kSep + "end" + kFw + ">after",
                  "Callafter"},
        StripCase{"deepseek_tool_calls_unclosed",
                  "Call<" + kFw + "tool" + kSep + "calls" + kSep + "begin" + kFw + ">fn {}",
                  "Call"},
        StripCase{"token_joins_tag", "<thi<|x|>nk>hidden</think>shown", "shown"}),
    [](const auto& info) { return std::string(info.param.name); });

class RedactTest : public ::testing::TestWithParam<RedactCase> {};

TEST_P(RedactTest, Redacts) {
  bool redacted = false;
  EXPECT_EQ(RedactSecrets(GetParam().input, &redacted), GetParam().expected);
  EXPECT_EQ(redacted, GetParam().input != GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Secrets, RedactTest,
    ::testing::Values(
        RedactCase{"openai", "key sk-abcdefghijklmnopqrstuvwx1234 end", "key [REDACTED] end"},
        RedactCase{"anthropic", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz_0123456789", "[REDACTED]"},
        RedactCase{"github", "token ghp_0123456789abcdefghijABCDEFGHIJ012345.",
                   "token [REDACTED]."},
        RedactCase{"github_pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"},
        RedactCase{"aws", "(AKIAIOSFODNN7EXAMPLE)", "([REDACTED])"},
        RedactCase{"aws_wrong_length", "AKIAIOSFODNN7EXAMPLEX", "AKIAIOSFODNN7EXAMPLEX"},
        RedactCase{"slack", "xoxb-1234-5678-abcdefghij", "[REDACTED]"},
        RedactCase{"google", "AIzaSyA-0123456789abcdefghijklmnopqrstu", "[REDACTED]"},
        RedactCase{"bearer", "Authorization: Bearer abcdef0123456789abcdef",
                   "Authorization: Bearer [REDACTED]"},
        RedactCase{"bearer_prose", "the bearer of bad news", "the bearer of bad news"},
        RedactCase{"jwt",
                   "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
                   "jwt=[REDACTED]"},
        RedactCase{"pem",
                   "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE "
                   "KEY-----\nok",
                   "[REDACTED]\nok"},
        RedactCase{"pem_unclosed", "x -----BEGIN PRIVATE KEY-----\nMIIE", "x [REDACTED]"},
        RedactCase{"pem_public_kept", "-----BEGIN PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----"},
        RedactCase{"url_password", "postgres://admin:hunter22@db:5432/x",
                   "postgres://admin:[REDACTED]@db:5432/x"},
        RedactCase{"url_no_password", "https://example.com:8080/a@b",
                   "https://example.com:8080/a@b"},
        RedactCase{"env_assignment", "DB_PASSWORD=hunter22 next", "DB_PASSWORD=[REDACTED] next"},
        RedactCase{"json_field", "{\"apiKey\": \"abcd1234efgh\"}", "{\"apiKey\": \"[REDACTED]\"}"},
        RedactCase{"json_field_spaces", "{\"password\": \"correct horse\"}",
                   "{\"password\": \"[REDACTED]\"}"},
        RedactCase{"query_string", "https://x.io/?api_key=abcd1234&x=1",
                   "https://x.io/?api_key=[REDACTED]&x=1"},
        RedactCase{"yaml_token", "access_token: abcdefgh12345678", "access_token: [REDACTED]"},
        RedactCase{"max_tokens_kept", "max_token: 4096, max_tokens=8192",
                   "max_token: 4096, max_tokens=8192"},
        RedactCase{"prose_kept", "the task-force uses sk-learn and a secret plan",
                   "the task-force uses sk-learn and a secret plan"},
        RedactCase{"module_name_kept", "pip install sk-learn-model-selection-utils",
                   "pip install sk-learn-model-selection-utils"},
        RedactCase{"already_redacted", "password=[REDACTED]", "password=[REDACTED]"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SanitizeTextTest, SecretSplitByAControlTokenIsCaughtJoined) {
  CleanText c = SanitizeText("key: sk-abcdefghij<|x|>klmnop0123456789");
  EXPECT_EQ(c.text, "key: [REDACTED]");
  EXPECT_TRUE(c.redacted);
}

TEST(SanitizeTextTest, SecretInsideAStrippedBlockIsGoneWithoutARedaction) {
  CleanText c = SanitizeText("<think>sk-abcdefghijklmnopqrstuvwxyz</think>ok");
  EXPECT_EQ(c.text, "ok");
  EXPECT_FALSE(c.redacted);
}

TEST(SanitizeTextTest, CutsAtCodePointsAfterRedacting) {
  std::string text(3980, 'a');
  text += " sk-" + std::string(40, 'z');  // straddles the cut
  CleanText c = SanitizeText(text);
  EXPECT_TRUE(c.redacted);
  EXPECT_EQ(c.text.find("sk-"), std::string::npos);
  EXPECT_FALSE(c.truncated);  // 3980 + " [REDACTED]" fits

  std::string accents;
  for (int i = 0; i < 5000; ++i) accents += "\xC3\xA9";  // é
  CleanText cut = SanitizeText(accents);
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.text.size(), 4000 * 2 + std::string(kTruncatedMarker).size());
  EXPECT_EQ(cut.text.substr(8000), kTruncatedMarker);
}

TEST(SanitizeTextTest, HugeHostileTextIsLinear) {
  // 4 MB of openers that never close and stray closers: must not recurse or go quadratic.
  std::string text;
  for (int i = 0; i < 200000; ++i) text += "<think></think>";
  text += "tail";
  for (int i = 0; i < 100000; ++i) text += "x</tool_call>";
  EXPECT_EQ(StripScaffolding(text).substr(0, 5), "tailx");
  std::string opens;
  for (int i = 0; i < 300000; ++i) opens += "<tool_call>";
  EXPECT_EQ(StripScaffolding("ok" + opens), "ok");
}

// ---- the view --------------------------------------------------------------------------------

TranscriptMessage Msg(uint64_t index, std::string role, json::value content,
                      std::string tool = "") {
  TranscriptMessage m;
  m.index = index;
  m.role = std::move(role);
  m.content_json = json::serialize(content);
  m.tool_name = std::move(tool);
  m.timestamp_ms = 1000 + static_cast<int64_t>(index);
  return m;
}

TEST(HistoryViewTest, LeavesToolResultsOutUnlessAsked) {
  std::vector<TranscriptMessage> msgs = {
      Msg(1, "user", "list files"),
      Msg(2, "assistant",
          json::array{
              json::object{{"type", "thinking"}, {"thinking", "plan"}},
              json::object{{"type", "text"}, {"text", "<think>x</think>Running ls"}},
              json::object{{"type", "tool_use"},
                           {"id", "t1"},
                           {"name", "bash"},
                           {"input", json::object{{"cmd", "ls"}, {"password", "hunter22"}}}}}),
      Msg(3, "toolResult", "a.txt\nb.txt", "bash"),
      Msg(4, "user",
          json::array{
              json::object{{"type", "tool_result"}, {"tool_use_id", "t1"}, {"content", "x"}},
              json::object{{"type", "image"}, {"source", json::object{{"data", "AAAA"}}}}}),
      Msg(5, "assistant", "<think>only reasoning</think>"),
  };
  HistoryView view = BuildHistoryView(msgs, {});
  ASSERT_EQ(view.messages.size(), 3u);  // tool message and the all-reasoning one are gone
  EXPECT_EQ(view.messages[0].at("content"), "list files");
  const json::array& blocks = view.messages[1].at("content").as_array();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].at("text"), "Running ls");
  EXPECT_EQ(blocks[1].at("name"), "bash");
  EXPECT_EQ(blocks[1].at("input"), "{\"cmd\":\"ls\",\"password\":\"[REDACTED]\"}");
  const json::array& user = view.messages[2].at("content").as_array();
  ASSERT_EQ(user.size(), 1u);
  EXPECT_EQ(json::serialize(user[0]), R"({"type":"image","omitted":true})");
  EXPECT_TRUE(view.content_redacted);
  EXPECT_FALSE(view.truncated);
  EXPECT_EQ(view.bytes, json::serialize(view.messages).size());

  HistoryViewOptions with_tools;
  with_tools.include_tools = true;
  HistoryView all = BuildHistoryView(msgs, with_tools);
  ASSERT_EQ(all.messages.size(), 4u);
  EXPECT_EQ(all.messages[2].at("role"), "toolResult");
  EXPECT_EQ(all.messages[2].at("toolName"), "bash");
  EXPECT_EQ(all.messages[3].at("content").as_array()[0].at("content"), "x");
}

TEST(HistoryViewTest, NonJsonContentIsText) {
  TranscriptMessage m;
  m.index = 7;
  m.role = "user";
  m.content_json = "not json <|eot|>";
  m.timestamp_ms = 5;
  std::vector<TranscriptMessage> msgs = {m};
  HistoryView view = BuildHistoryView(msgs, {});
  ASSERT_EQ(view.messages.size(), 1u);
  EXPECT_EQ(view.messages[0].at("content"), "not json");
  EXPECT_EQ(view.messages[0].at("index"), 7);
  EXPECT_EQ(view.messages[0].at("timestamp"), 5);
}

TEST(HistoryViewTest, OversizedMessageIsOmittedAndOldestAreDropped) {
  std::vector<TranscriptMessage> msgs;
  for (uint64_t i = 1; i <= 100; ++i)
    msgs.push_back(Msg(i, "user", json::string(std::string(2000, 'm'))));
  json::array big;
  for (int b = 0; b < 30; ++b)
    big.push_back(json::object{{"type", "text"}, {"text", std::string(5000, 'b')}});
  msgs.push_back(Msg(101, "assistant", big));

  HistoryView view = BuildHistoryView(msgs, {});
  EXPECT_TRUE(view.truncated);
  EXPECT_TRUE(view.content_truncated);
  EXPECT_LE(view.bytes, kHistoryMaxBytes);
  EXPECT_EQ(view.bytes, json::serialize(view.messages).size());
  const json::object& last = view.messages.back().as_object();
  EXPECT_EQ(last.at("index"), 101);
  EXPECT_EQ(last.at("content"), kOmittedMessage);
  EXPECT_EQ(view.dropped_messages + view.messages.size(), 101u);
  EXPECT_GT(view.dropped_messages, 50u);
  // The kept ones are the newest, in order.
  EXPECT_EQ(view.messages[view.messages.size() - 2].at("index"), 100);
}

}  // namespace
}  // namespace statewatch::tools
