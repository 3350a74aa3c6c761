// net::ParseHttpAnswer: the framing of an answer — Content-Length, chunked (etcd's gateway),
// neither — with header names in any case, and a malformed chunked body refused with an
// IOError that says what was wrong.
#include "net/http_client.h"

#include <gtest/gtest.h>

#include <string>

#include "status_matchers.h"

namespace statewatch::net {
namespace {

// Each framing of a whole answer: the status, and the body as the framing delimits it.
TEST(ParseHttpAnswerTest, EachFramingGivesTheStatusAndTheBody) {
  struct Case {
    const char* framing;
    std::string raw;
    int status;
    std::string body;
  };
  const Case cases[] = {
      {"Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, "hello"},
      {"none: everything to the close",
       "HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\n{\"a\":1}\n", 404, "{\"a\":1}\n"},
      // As etcd's gateway sends it: lower-case header, a chunk extension, a trailer.
      {"chunked",
       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ntransfer-encoding: Chunked\r\n\r\n"
       "7\r\n{\"a\":\"1\r\n"
       "c;ext=1\r\n\",\"bb\":\"22\"}\r\n"
       "0\r\nX-Trailer: y\r\n\r\n",
       200, "{\"a\":\"1\",\"bb\":\"22\"}"},
      {"chunked wins over Content-Length",
       "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n"
       "3\r\nabc\r\n0\r\n\r\n",
       200, "abc"},
      {"204 No Content has no body", "HTTP/1.1 204 No Content\r\nContent-Length: 12\r\n\r\n",
       204, ""},
  };
  for (const Case& c : cases) {
    auto a = ParseHttpAnswer(c.raw);
    ASSERT_OK(a) << c.framing;
    EXPECT_EQ(a->status, c.status) << c.framing;
    EXPECT_EQ(a->body, c.body) << c.framing;
  }
}

TEST(ParseHttpAnswerTest, ContentLengthCutShortIsIOError) {
  auto a = ParseHttpAnswer("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhello");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Status::Code::kIOError);
  EXPECT_NE(a.status().message().find("5 of its 10"), std::string::npos) << a.status().message();
}

TEST(ParseHttpAnswerTest, MalformedChunkedBodiesAreIOErrorsNamingTheFault) {
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  struct Case {
    std::string body;
    std::string expected;  // a piece of the message
  };
  const Case cases[] = {
      {"zz\r\nabc\r\n0\r\n\r\n", "bad size line \"zz\""},
      {"\r\nabc\r\n0\r\n\r\n", "bad size line"},
      {"10\r\nabc\r\n0\r\n\r\n", "chunk 0 declares 16 bytes but only"},
      {"3\r\nabcd\r\n0\r\n\r\n", "chunk 0 is not followed by CRLF"},
      {"3\r\nabc\r\n", "chunk 1 has no complete size line"},
      {"3\r\nabc\r\n0\r\n", "no empty line after the last chunk"},
      {"ffffffffffffffffff\r\n", "bad size line"},
  };
  for (const Case& c : cases) {
    auto a = ParseHttpAnswer(head + c.body);
    ASSERT_FALSE(a.ok()) << c.body;
    EXPECT_EQ(a.status().code(), Status::Code::kIOError) << c.body;
    EXPECT_NE(a.status().message().find(c.expected), std::string::npos)
        << "body " << c.body << ": " << a.status().message();
  }
}

TEST(ParseHttpAnswerTest, NotHttpIsIOError) {
  auto a = ParseHttpAnswer("SSH-2.0-OpenSSH\r\n\r\n");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Status::Code::kIOError);
  auto bad_length = ParseHttpAnswer("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n");
  ASSERT_FALSE(bad_length.ok());
  EXPECT_NE(bad_length.status().message().find("bad Content-Length"), std::string::npos);
}

TEST(HttpRequestTest, BadUrlIsInvalidArgument) {
  auto a = HttpRequest("ftp://example.com", "GET", "/", "", "");
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(a.status().IsInvalidArgument());
}

}  // namespace
}  // namespace statewatch::net
