// The JSON writer and reader: escaping, round trips, and hostile input.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "json_value.h"
#include "json_writer.h"

namespace leaseguard::report {
namespace {

TEST(JsonWriter, EscapesAndRoundTrips) {
  JsonWriter writer;
  writer.begin_object();
  writer.key("text").value(std::string_view("quote \" backslash \\ newline \n tab \t bell \x07 utf8 \xc3\xa9"));
  writer.key("bad_utf8").value(std::string_view("\xff\xfe"));
  writer.key("numbers")
      .begin_array()
      .value(uint64_t{18446744073709551615ull})
      .value(int64_t{-5})
      .value(1.5)
      .end_array();
  writer.key("nothing").null();
  writer.key("empty").begin_object().end_object();
  writer.end_object();
  JsonValue parsed;
  std::string error;
  ASSERT_TRUE(JsonValue::parse(writer.text(), parsed, error)) << error << "\n" << writer.text();
  EXPECT_EQ(parsed["text"].as_string(), "quote \" backslash \\ newline \n tab \t bell \x07 utf8 \xc3\xa9");
  EXPECT_EQ(parsed["bad_utf8"].as_string(), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(parsed["numbers"].size(), 3u);
  EXPECT_EQ(parsed["numbers"][1].as_number(), -5);
  EXPECT_TRUE(parsed["nothing"].is_null());
  EXPECT_EQ(parsed["empty"].type(), JsonValue::Type::Object);
}

// Plain runs are copied whole and the rest byte by byte: every ASCII byte, at the start, in
// the middle and at the end of plain text, comes back as it went; the escapes are the
// short ones where JSON has them.
TEST(JsonWriter, EveryAsciiByteRoundTripsWhereverItStands) {
  for (int byte = 0; byte < 0x80; ++byte) {
    const std::string alone(1, static_cast<char>(byte));
    for (const std::string &text : {alone, alone + "tail", "head" + alone, "head" + alone + alone + "tail"}) {
      JsonValue parsed;
      std::string error;
      ASSERT_TRUE(JsonValue::parse(JsonWriter::escape(text), parsed, error)) << byte << ": " << error;
      EXPECT_EQ(parsed.as_string(), text) << "byte " << byte;
    }
  }
  EXPECT_EQ(JsonWriter::escape("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(JsonWriter::escape("\n\r\t"), R"("\n\r\t")");
  EXPECT_EQ(JsonWriter::escape(std::string_view("\x01\x7f", 2)), R"("\u0001\u007f")");
  EXPECT_EQ(JsonWriter::escape("f(int) \xc3\xa9 \xe2"), "\"f(int) \xc3\xa9 \\ufffd\"");
  std::string appended = "[";
  JsonWriter::append_escaped(appended, "x\"y");
  EXPECT_EQ(appended, R"(["x\"y")");
}

// The same document, made by a writer that keeps it whole and by one that hands it over a
// piece at a time: the pieces join to the same text, and none is much past the spill size.
TEST(JsonWriter, HandsOverThePiecesOfExactlyTheWholeText) {
  auto write = [](JsonWriter &writer) {
    writer.begin_object().key("items").begin_array();
    for (int i = 0; i < 20000; ++i) {
      writer.begin_object();
      writer.key("index").value(i).key("name").value("item \"" + std::to_string(i) + "\"");
      writer.key("ratio").value(i / 7.0).key("even").value(i % 2 == 0).key("nothing").null();
      writer.key("empty").begin_array().end_array();
      writer.end_object();
    }
    writer.end_array().end_object();
  };
  JsonWriter whole;
  write(whole);
  std::string joined;
  size_t pieces = 0;
  size_t largest = 0;
  JsonWriter spilled(2, [&](std::string_view piece) {
    joined.append(piece);
    ++pieces;
    largest = std::max(largest, piece.size());
  });
  write(spilled);
  EXPECT_LT(joined.size(), whole.text().size()) << "pieces are handed over before finish()";
  spilled.finish();
  EXPECT_EQ(joined, whole.text());
  EXPECT_GT(pieces, whole.text().size() / kSinkPieceBytes / 2);
  EXPECT_LT(largest, kSinkPieceBytes + 1024);
  spilled.finish();  // nothing more to hand over
  EXPECT_EQ(joined, whole.text());
}

// A name given twice has the value given last, in small objects (scanned) and in large
// ones (indexed) alike; lookups of absent names, and of names in non-objects, are null.
TEST(JsonValue, ANameGivenTwiceHasTheValueGivenLast) {
  for (int members : {3, 31, 32, 33, 200}) {
    std::string text = "{";
    for (int i = 0; i < members; ++i) text += "\"m" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
    text += "\"m1\": \"again\", \"m" + std::to_string(members - 1) + "\": [1, 2]}";
    JsonValue parsed;
    std::string error;
    ASSERT_TRUE(JsonValue::parse(text, parsed, error)) << error;
    EXPECT_EQ(parsed.size(), static_cast<size_t>(members)) << members;
    EXPECT_EQ(parsed["m0"].as_number(), 0) << members;
    EXPECT_EQ(parsed["m1"].as_string(), "again") << members;
    EXPECT_EQ(parsed["m" + std::to_string(members - 1)].size(), 2u) << members;
    if (members > 3) {
      EXPECT_EQ(parsed["m2"].as_number(), 2) << members;
    }
    EXPECT_TRUE(parsed["absent"].is_null());
    EXPECT_FALSE(parsed.has("absent"));
    EXPECT_TRUE(parsed.has("m0"));
    EXPECT_TRUE(parsed["m0"]["m0"].is_null());
    EXPECT_TRUE(parsed["m0"][size_t{0}].is_null());
    EXPECT_TRUE(parsed["m0"].items().empty());
  }
}

TEST(JsonValue, RejectsMalformedDocumentsWithAPosition) {
  for (const char *bad :
       {"", "{", "[1,]", "{\"a\" 1}", "\"unterminated", "tru", "{\"a\":1}x", "[\"\\x\"]", "01a", "\"\x01\""}) {
    JsonValue value;
    std::string error;
    EXPECT_FALSE(JsonValue::parse(bad, value, error)) << bad;
    EXPECT_NE(error.find("line 1 column"), std::string::npos) << error;
  }
}

TEST(JsonValue, BoundsNesting) {
  std::string deep(100000, '[');
  JsonValue value;
  std::string error;
  EXPECT_FALSE(JsonValue::parse(deep, value, error));
  EXPECT_NE(error.find("too deep"), std::string::npos);
}

TEST(JsonValue, DecodesSurrogatePairs) {
  JsonValue value;
  std::string error;
  ASSERT_TRUE(JsonValue::parse("\"\\ud83d\\ude00\"", value, error));
  EXPECT_EQ(value.as_string(), "\xf0\x9f\x98\x80");
}

}  // namespace
}  // namespace leaseguard::report
