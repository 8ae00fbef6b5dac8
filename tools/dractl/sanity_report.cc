// The two forms of a sanity run's results: text for a person, JUnit XML for CI.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dractl/sanity.h"

namespace dra::sanity {
namespace {

std::string_view Label(const Result& result) {
  switch (result.outcome) {
    case Outcome::kPass:
      return "PASS";
    case Outcome::kSkip:
      return "SKIP";
    case Outcome::kFail:
      return result.check->level == Level::kRequired ? "FAIL" : "WARN";
  }
  return "?";
}

std::string XmlEscaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\n':
        out += "&#10;";
        break;
      default:
        // Control characters are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
          out += "?";
        } else {
          out += c;
        }
    }
  }
  return out;
}

int Count(std::span<const Result> results, std::string_view label) {
  return static_cast<int>(
      std::count_if(results.begin(), results.end(), [&](const Result& r) { return Label(r) == label; }));
}

}  // namespace

void WriteResult(std::ostream& out, const Result& result) {
  out << Label(result) << "  " << absl::StrFormat("%-6s", result.check->id) << " " << result.check->rule << "\n";
  if (result.outcome != Outcome::kPass && !result.detail.empty()) out << "        " << result.detail << "\n";
  if (result.outcome == Outcome::kFail) out << "        rule from: " << result.check->source << "\n";
  out.flush();
}

void WriteSummary(std::ostream& out, std::span<const Result> results) {
  out << results.size() << " checks: " << Count(results, "PASS") << " passed, " << Count(results, "FAIL") << " failed, "
      << Count(results, "WARN") << " recommended not followed, " << Count(results, "SKIP") << " skipped\n";
}

std::string JUnitXml(std::span<const Result> results, absl::Duration elapsed) {
  const int failures = Count(results, "FAIL") + Count(results, "WARN");
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  absl::StrAppendFormat(&xml, "<testsuites tests=\"%d\" failures=\"%d\" time=\"%.3f\">\n", results.size(), failures,
                        absl::ToDoubleSeconds(elapsed));
  absl::StrAppendFormat(&xml, "  <testsuite name=\"dractl sanity\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n",
                        results.size(), failures, Count(results, "SKIP"));
  for (const Result& result : results) {
    const std::string id = result.check->id;
    const std::string group = id.substr(0, id.find('-'));
    absl::StrAppend(&xml, "    <testcase classname=\"sanity.", group, "\" name=\"",
                    XmlEscaped(absl::StrCat(result.check->id, " ", result.check->rule)), "\">");
    if (result.outcome == Outcome::kFail) {
      const std::string type = result.check->level == Level::kRequired ? "required" : "recommended";
      absl::StrAppend(&xml, "<failure type=\"", type, "\" message=\"", XmlEscaped(result.detail), "\">",
                      XmlEscaped(absl::StrCat("rule from: ", result.check->source)), "</failure>");
    } else if (result.outcome == Outcome::kSkip) {
      absl::StrAppend(&xml, "<skipped message=\"", XmlEscaped(result.detail), "\"/>");
    }
    absl::StrAppend(&xml, "</testcase>\n");
  }
  absl::StrAppend(&xml, "  </testsuite>\n</testsuites>\n");
  return xml;
}

bool Failed(std::span<const Result> results) {
  return std::any_of(results.begin(), results.end(),
                     [](const Result& r) { return r.outcome == Outcome::kFail && r.check->level == Level::kRequired; });
}

}  // namespace dra::sanity
