// base/sha256.h: the FIPS 180-2 known answers, on one thread's reused context and on
// several threads at once (each digests with its own context).
#include "base/sha256.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace statewatch::sha256 {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

constexpr std::string_view kAbc = "abc";
constexpr std::string_view kAbcDigest =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr std::string_view kEmptyDigest =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr std::string_view kTwoBlocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
constexpr std::string_view kTwoBlocksDigest =
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";

TEST(Sha256Test, AReusedContextGivesTheKnownAnswersInAnyOrder) {
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(Hex(BytesOf(kAbc)), kAbcDigest) << round;
    EXPECT_EQ(Hex(BytesOf("")), kEmptyDigest) << round;
    EXPECT_EQ(Hex(BytesOf(kTwoBlocks)), kTwoBlocksDigest) << round;
  }
  const Digest d = Of(kAbc);
  EXPECT_EQ(Hex(std::string_view(reinterpret_cast<const char*>(d.data()), d.size())),
            kAbcDigest);
}

TEST(Sha256Test, ThreadsDigestAtOnceWithTheirOwnContexts) {
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < 500; ++i) {
        const bool ok = (i + t) % 2 == 0 ? Hex(BytesOf(kAbc)) == kAbcDigest
                                         : Hex(BytesOf(kTwoBlocks)) == kTwoBlocksDigest;
        if (!ok) ++wrong[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace statewatch::sha256
