// An independent reader of the SVG files ordo writes, for the tests: a small
// XML parser (elements, attributes, text, the five predefined entities and
// character references, comments and the XML declaration; XML 1.0 §2-§4)
// that fails a REQUIRE on anything ill-formed, and the text a browser would
// set with where it lands (each <g transform="translate(x y)"> followed down
// the tree). Nothing of plot/svg.cpp is used.
#pragma once

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tests/helpers.h"

namespace ordo::svg_check {

struct Element {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::vector<Element> children;
  std::string text;  // the character data directly inside, entities resolved

  std::string at(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? std::string() : it->second;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  Element document() {
    skip_space();
    if (s_.compare(at_, 5, "<?xml") == 0) {
      const size_t end = s_.find("?>", at_);
      REQUIRE(end != std::string::npos);
      at_ = end + 2;
    }
    skip_misc();
    Element root = element();
    skip_misc();
    INFO("after the root element at byte " << at_);
    REQUIRE(at_ == s_.size());
    return root;
  }

 private:
  const std::string& s_;
  size_t at_ = 0;

  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':';
  }
  void skip_space() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }
  void skip_misc() {
    for (skip_space(); s_.compare(at_, 4, "<!--") == 0; skip_space()) {
      const size_t end = s_.find("-->", at_);
      REQUIRE(end != std::string::npos);
      at_ = end + 3;
    }
  }
  std::string name() {
    const size_t start = at_;
    while (at_ < s_.size() && name_char(s_[at_])) ++at_;
    INFO("a name at byte " << start);
    REQUIRE(at_ > start);
    REQUIRE(!std::isdigit(static_cast<unsigned char>(s_[start])));
    return s_.substr(start, at_ - start);
  }
  // Text up to `stop`, with & references resolved; '<' is not allowed in it.
  std::string characters(char stop) {
    std::string out;
    while (at_ < s_.size() && s_[at_] != stop) {
      const char c = s_[at_];
      INFO("character data at byte " << at_);
      REQUIRE(c != '<');
      if (c != '&') {
        out += c, ++at_;
        continue;
      }
      const size_t semi = s_.find(';', at_);
      REQUIRE(semi != std::string::npos);
      const std::string ref = s_.substr(at_ + 1, semi - at_ - 1);
      static const std::map<std::string, std::string> named = {
          {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
      if (named.count(ref)) {
        out += named.at(ref);
      } else {
        INFO("reference &" << ref << ";");
        REQUIRE(ref.size() > 1);
        REQUIRE(ref[0] == '#');
        const long code = ref[1] == 'x' ? std::strtol(ref.c_str() + 2, nullptr, 16) : std::strtol(ref.c_str() + 1, nullptr, 10);
        REQUIRE(code > 0);
        REQUIRE(code < 128);  // ordo writes ASCII references only
        out += static_cast<char>(code);
      }
      at_ = semi + 1;
    }
    return out;
  }
  Element element() {
    INFO("an element at byte " << at_);
    REQUIRE(at_ < s_.size());
    REQUIRE(s_[at_] == '<');
    ++at_;
    Element e;
    e.name = name();
    for (;;) {
      const size_t before = at_;
      skip_space();
      REQUIRE(at_ < s_.size());
      if (s_[at_] == '/') {
        REQUIRE(s_.compare(at_, 2, "/>") == 0);
        at_ += 2;
        return e;
      }
      if (s_[at_] == '>') {
        ++at_;
        break;
      }
      REQUIRE(at_ > before);  // attributes are separated by white space
      const std::string key = name();
      REQUIRE(s_[at_] == '=');
      ++at_;
      const char quote = s_[at_];
      REQUIRE((quote == '"' || quote == '\''));
      ++at_;
      const std::string value = characters(quote);
      REQUIRE(at_ < s_.size());
      ++at_;
      INFO("attribute " << key);
      REQUIRE(e.attributes.count(key) == 0);
      e.attributes[key] = value;
    }
    for (;;) {
      e.text += characters('<');
      REQUIRE(at_ < s_.size());
      if (s_.compare(at_, 4, "<!--") == 0) {
        skip_misc();
      } else if (s_.compare(at_, 2, "</") == 0) {
        at_ += 2;
        INFO("the end tag of <" << e.name << ">");
        REQUIRE(name() == e.name);
        skip_space();
        REQUIRE(s_[at_] == '>');
        ++at_;
        return e;
      } else {
        e.children.push_back(element());
      }
    }
  }
};

inline Element parse(const std::string& xml) { return Parser(xml).document(); }

// A piece of text as placed: its anchor point in the document's coordinates.
struct Text {
  double x = 0, y = 0, size = 0;
  std::string anchor = "start";
  bool vertical = false;  // turned 90 degrees (an axis label)
  std::string content;
};

inline void collect_texts(const Element& e, double dx, double dy, std::vector<Text>& out) {
  const std::string transform = e.at("transform");
  if (e.name == "g" && transform.rfind("translate(", 0) == 0) {
    char* end = nullptr;
    dx += std::strtod(transform.c_str() + 10, &end);
    dy += std::strtod(end, nullptr);
  }
  if (e.name == "text") {
    Text t;
    t.x = dx + std::atof(e.at("x").c_str());
    t.y = dy + std::atof(e.at("y").c_str());
    t.size = std::atof(e.at("font-size").c_str());
    if (!e.at("text-anchor").empty()) t.anchor = e.at("text-anchor");
    t.vertical = transform.rfind("rotate(-90", 0) == 0;
    t.content = e.text;
    out.push_back(t);
  }
  for (const Element& c : e.children) collect_texts(c, dx, dy, out);
}

inline std::vector<Text> texts(const Element& root) {
  std::vector<Text> out;
  collect_texts(root, 0, 0, out);
  return out;
}

struct Box {
  double left, top, right, bottom;
};
// Where a text's ink can reach, with a generous 0.62 em a character (sans-serif
// fonts average about 0.55 em over ordinary words) and 1 em of height.
inline Box box(const Text& t) {
  const double length = 0.62 * t.size * static_cast<double>(t.content.size());
  const double start = t.anchor == "middle" ? -length / 2 : t.anchor == "end" ? -length : 0;
  if (t.vertical)  // rotated anticlockwise about (x, y): the run goes up from y
    return {t.x - t.size, t.y - start - length, t.x + 0.25 * t.size, t.y - start};
  return {t.x + start, t.y - t.size, t.x + start + length, t.y + 0.25 * t.size};
}

// The viewBox's width and height, checked against width and height.
inline std::pair<double, double> view_box(const Element& svg) {
  REQUIRE(svg.name == "svg");
  REQUIRE(svg.at("xmlns") == "http://www.w3.org/2000/svg");
  double x = -1, y = -1, w = 0, h = 0;
  REQUIRE(std::sscanf(svg.at("viewBox").c_str(), "%lf %lf %lf %lf", &x, &y, &w, &h) == 4);
  CHECK(x == 0);
  CHECK(y == 0);
  CHECK(std::atof(svg.at("width").c_str()) == w);
  CHECK(std::atof(svg.at("height").c_str()) == h);
  return {w, h};
}

// Every text inside the view box and at least min_size pixels.
inline void check_texts_inside(const Element& svg, double min_size) {
  const auto [w, h] = view_box(svg);
  for (const Text& t : texts(svg)) {
    const Box b = box(t);
    INFO("text '" << t.content << "' at (" << t.x << ", " << t.y << "), size " << t.size << ", view box " << w
                  << " x " << h);
    CHECK(t.size >= min_size);
    CHECK(b.left >= 0);
    CHECK(b.top >= 0);
    CHECK(b.right <= w);
    CHECK(b.bottom <= h);
  }
}

// How often `content` is a whole text of the figure.
inline int count_text(const Element& svg, const std::string& content) {
  int n = 0;
  for (const Text& t : texts(svg)) n += t.content == content;
  return n;
}

}  // namespace ordo::svg_check
