// The GLUE readers on hand-written files in each task's real layout
// (tests/data/downstream/<TASK>/), the submission files, and every bad input
// named with its file and line. Expected fields are read off the files by eye.
#include <catch2/catch.hpp>

#include <string>

#include "base/error.h"
#include "base/file_io.h"
#include "downstream/glue.h"
#include "tests/helpers.h"

using namespace ordo::downstream;
using Catch::Matchers::Contains;

namespace {

std::string data(const std::string& name) { return std::string(ORDO_SOURCE_DIR) + "/tests/data/downstream/" + name; }

GlueSet read(const std::string& task, const std::string& file) { return read_glue(glue_task(task), data(file)); }

}  // namespace

TEST_CASE("CoLA: no header, four columns, a quote is a character", "[downstream][glue]") {
  const GlueSet dev = read("cola", "CoLA/dev.tsv");
  CHECK(dev.labelled);
  REQUIRE(dev.examples.size() == 10);  // the first row is an example, not a header
  CHECK(dev.examples[0].id == "0");
  CHECK(dev.examples[0].text_a == "Our friends won't buy this analysis, let alone the next one we propose.");
  CHECK(dev.examples[0].label == 1);
  CHECK(dev.examples[0].line == 1);
  CHECK(dev.examples[2].text_a == "They drank the pub.");
  CHECK(dev.examples[2].label == 0);
  CHECK(dev.examples[3].text_a == "He said \"hello to everyone.");  // an unbalanced quote, kept
  CHECK(dev.examples[6].text_a == "I'll fix you a drink \"quickly\" the.");
  CHECK(dev.examples[9].id == "9");
  CHECK(dev.examples[0].text_b.empty());
  const GlueSet test = read("cola", "CoLA/test.tsv");  // the test file has a header: index, sentence
  CHECK_FALSE(test.labelled);
  REQUIRE(test.examples.size() == 3);
  CHECK(test.examples[1].id == "1");
  CHECK(test.examples[1].text_a == "The car honked \"its way down the road.");
  CHECK(test.examples[1].line == 3);
}

TEST_CASE("SST-2, MRPC, QQP, QNLI, RTE, WNLI: columns by the processors' positions", "[downstream][glue]") {
  const GlueSet sst = read("sst2", "SST-2/dev.tsv");  // CRLF line ends
  REQUIRE(sst.examples.size() == 8);
  CHECK(sst.examples[4].text_a == "it 's slow -- very , very slow . ");  // trailing space kept, no \r
  CHECK(sst.examples[4].label == 0);
  CHECK(sst.examples[5].text_a == "a \"sometimes tedious film . ");
  CHECK(sst.examples[7].line == 9);
  const GlueSet sst_test = read("sst2", "SST-2/test.tsv");
  CHECK_FALSE(sst_test.labelled);
  CHECK(sst_test.examples[0].text_a == "uneasy mishmash of styles and genres .");

  const GlueSet mrpc = read("mrpc", "MRPC/dev.tsv");  // starts with a byte-order mark
  REQUIRE(mrpc.examples.size() == 7);
  CHECK(mrpc.examples[0].label == 1);  // Quality, column 0
  CHECK(mrpc.examples[0].text_a ==
        "He said the foodservice pie business doesn 't fit the company 's long-term growth strategy .");
  CHECK(mrpc.examples[0].text_b == "\" The foodservice pie business does not fit our long-term growth strategy .");
  CHECK(mrpc.examples[0].id == "0");  // no index column: the position
  const GlueSet mrpc_test = read("mrpc", "MRPC/test.tsv");
  CHECK_FALSE(mrpc_test.labelled);
  CHECK(mrpc_test.examples[0].text_b ==
        "Current Chief Operating Officer Mike Butcher and Group Chief Financial Officer Alex Arena will report to So .");

  const GlueSet qqp = read("qqp", "QQP/dev.tsv");
  REQUIRE(qqp.examples.size() == 6);
  CHECK(qqp.examples[0].id == "201359");  // the id column
  CHECK(qqp.examples[2].text_a == "Is there a reason why we should travel alone?");
  CHECK(qqp.examples[2].text_b == "What are some reasons to travel alone?");
  CHECK(qqp.examples[2].label == 1);
  CHECK(qqp.examples[4].text_a == "What are the \"best\" things to do in Hong Kong?");
  const GlueSet qqp_test = read("qqp", "QQP/test.tsv");  // id question1 question2
  CHECK(qqp_test.examples[0].text_b == "What is a good way to lose weight?");

  const GlueSet qnli = read("qnli", "QNLI/dev.tsv");
  REQUIRE(qnli.examples.size() == 4);
  CHECK(qnli.examples[1].label == 1);  // not_entailment
  CHECK(qnli.examples[3].text_a == "How was Temüjin kept imprisoned by the Tayichi'ud?");

  const GlueSet rte = read("rte", "RTE/dev.tsv");
  REQUIRE(rte.examples.size() == 3);
  CHECK(rte.examples[1].label == 0);  // entailment
  CHECK(rte.examples[1].text_b == "Bacteria is winning the war against antibiotics.");
  CHECK(read("rte", "RTE/test.tsv").examples[0].text_b == "Shukla is related to Mangla.");

  const GlueSet wnli = read("wnli", "WNLI/dev.tsv");
  CHECK(wnli.examples[1].label == 1);
  CHECK(wnli.examples[1].text_a == "Jane knocked on Susan's door but she did not answer.");

  const GlueSet ax = read("ax", "diagnostic/diagnostic.tsv");
  CHECK_FALSE(ax.labelled);
  CHECK(ax.examples[1].text_b == "When you've got snow, it's really hard to learn a snow sport.");
}

TEST_CASE("STS-B: sentences in columns 7 and 8, the score last", "[downstream][glue]") {
  const GlueSet dev = read("stsb", "STS-B/dev.tsv");
  REQUIRE(dev.examples.size() == 9);
  CHECK(dev.examples[0].text_a == "A man with a hard hat is dancing.");
  CHECK(dev.examples[0].text_b == "A man wearing a hard hat is dancing.");
  CHECK(dev.examples[0].score == 5.0);
  CHECK(dev.examples[5].score == 2.615);
  CHECK(dev.examples[6].text_a == "\"Obama signs\" law.");
  CHECK(dev.examples[7].score == 0.0);
  CHECK(dev.examples[0].label == -1);
  const GlueSet test = read("stsb", "STS-B/test.tsv");
  CHECK_FALSE(test.labelled);
  CHECK(test.examples[0].text_b == "A girl is brushing her hair.");
}

TEST_CASE("MNLI: matched and mismatched dev sets, train's narrower rows, the gold label last",
          "[downstream][glue]") {
  const GlueSet matched = read("mnli", "MNLI/dev_matched.tsv");
  CHECK(matched.mnli == MnliSet::matched);
  REQUIRE(matched.examples.size() == 5);
  CHECK(matched.examples[0].text_a == "The new rights are nice enough");
  CHECK(matched.examples[0].text_b == "Everyone really likes the newest benefits ");
  // label1 is "neutral", label2 "entailment": the gold label is the last column.
  CHECK(matched.examples[0].label == glue_task("mnli").label_index("neutral"));
  CHECK(matched.examples[2].label == 1);  // entailment
  const GlueSet mismatched = read("mnli", "MNLI/dev_mismatched.tsv");
  CHECK(mismatched.mnli == MnliSet::mismatched);
  REQUIRE(mismatched.examples.size() == 4);
  CHECK(mismatched.examples[3].label == 2);  // neutral
  const GlueSet train = read("mnli", "MNLI/train.tsv");  // label1 gold_label: 12 columns
  CHECK(train.mnli == MnliSet::none);
  REQUIRE(train.examples.size() == 2);
  CHECK(train.examples[1].label == 1);
  const GlueSet test = read("mnli", "MNLI/test_matched.tsv");  // ten columns, no label
  CHECK_FALSE(test.labelled);
  CHECK(test.mnli == MnliSet::matched);
  CHECK(test.examples[0].text_b == "Hierbas is a name worth looking out for.");
}

TEST_CASE("label sets and submission names as GLUE has them", "[downstream][glue]") {
  CHECK(glue_task("mnli").labels == std::vector<std::string>{"contradiction", "entailment", "neutral"});
  CHECK(glue_task("qnli").labels == std::vector<std::string>{"entailment", "not_entailment"});
  CHECK(glue_task("rte").labels == glue_task("qnli").labels);
  for (const char* t : {"cola", "sst2", "mrpc", "qqp", "wnli"}) CHECK(glue_task(t).labels == std::vector<std::string>{"0", "1"});
  CHECK(glue_task("stsb").regression());
  const std::vector<std::pair<std::string, std::string>> names{
      {"cola", "CoLA.tsv"}, {"sst2", "SST-2.tsv"}, {"mrpc", "MRPC.tsv"}, {"stsb", "STS-B.tsv"}, {"qqp", "QQP.tsv"},
      {"qnli", "QNLI.tsv"}, {"rte", "RTE.tsv"},    {"wnli", "WNLI.tsv"}, {"ax", "AX.tsv"}};
  for (const auto& [task, name] : names) CHECK(glue_submission_name(glue_task(task)) == name);
  CHECK(glue_submission_name(glue_task("mnli"), MnliSet::matched) == "MNLI-m.tsv");
  CHECK(glue_submission_name(glue_task("mnli"), MnliSet::mismatched) == "MNLI-mm.tsv");
  CHECK_THROWS_WITH(glue_submission_name(glue_task("mnli")), Contains("MNLI-m.tsv (matched) or MNLI-mm.tsv"));
  CHECK_THROWS_WITH(glue_task("sst-2"),
                    Contains("unknown GLUE task 'sst-2' (the tasks: cola sst2 mrpc stsb qqp mnli qnli rte wnli ax)"));
}

TEST_CASE("a submission file is written as GLUE takes it and reads back", "[downstream][glue]") {
  ordo::test::TempDir dir("glue-submission");
  const GlueSet rte = read("rte", "RTE/test.tsv");
  write_glue_submission(dir / "RTE.tsv", rte, GluePredictions{{1}, {}});
  CHECK(ordo::read_file(dir / "RTE.tsv") == "index\tprediction\n0\tnot_entailment\n");
  const GlueSet stsb = read("stsb", "STS-B/dev.tsv");
  GluePredictions scores;
  for (int i = 0; i < 9; ++i) scores.scores.push_back(0.1 * i + 1.0 / 3);
  write_glue_submission(dir / "STS-B.tsv", stsb, scores);
  const GluePredictions back = read_glue_submission(dir / "STS-B.tsv", stsb);
  CHECK(back.scores == scores.scores);  // shortest round-trip text: the same doubles
  const GlueSet qqp = read("qqp", "QQP/dev.tsv");
  write_glue_submission(dir / "QQP.tsv", qqp, GluePredictions{{0, 1, 1, 0, 0, 1}, {}});
  CHECK(ordo::read_file(dir / "QQP.tsv") ==
        "index\tprediction\n201359\t0\n263843\t1\n172974\t1\n15329\t0\n209794\t0\n49849\t1\n");
  CHECK(read_glue_submission(dir / "QQP.tsv", qqp).labels == std::vector<int>{0, 1, 1, 0, 0, 1});
  CHECK_THROWS_WITH(write_glue_submission(dir / "bad.tsv", qqp, GluePredictions{{0, 1}, {}}),
                    Contains("needs 6 predictions, got 2"));
  CHECK_THROWS_WITH(write_glue_submission(dir / "bad.tsv", rte, GluePredictions{{2}, {}}), Contains("is class 2"));
  CHECK_FALSE(ordo::file_exists(dir / "bad.tsv"));
}

TEST_CASE("bad GLUE files: wrong columns, labels outside the set, foreign headers, each at file:line",
          "[downstream][glue][errors]") {
  ordo::test::TempDir dir("glue-bad");
  const auto& rte = glue_task("rte");
  const std::string head = "index\tsentence1\tsentence2\tlabel\n";
  const std::string short_row = dir.write("short.tsv", head + "0\ta\tb\tentailment\n1\ta\tnot_entailment\n");
  CHECK_THROWS_WITH(read_glue(rte, short_row), Contains("short.tsv:3: 3 columns, but RTE's train/dev layout has 4"));
  const std::string long_row = dir.write("long.tsv", head + "0\ta\tb\tentailment\textra\n");
  CHECK_THROWS_WITH(read_glue(rte, long_row), Contains("long.tsv:2: 5 columns"));
  const std::string bad_label = dir.write("label.tsv", head + "0\ta\tb\tentailment\n1\ta\tb\tneutral\n");
  CHECK_THROWS_WITH(read_glue(rte, bad_label), Contains("label.tsv:3: label 'neutral' is not one of RTE's labels "
                                                        "(entailment, not_entailment)"));
  const std::string blank = dir.write("blank.tsv", head + "0\ta\tb\tentailment\n\n");
  CHECK_THROWS_WITH(read_glue(rte, blank), Contains("blank.tsv:3: 1 column,"));
  // A QNLI file given as RTE: the header says so.
  CHECK_THROWS_WITH(read_glue(rte, data("QNLI/dev.tsv")),
                    Contains("dev.tsv:1: not a GLUE RTE file: its header is 'index\\tquestion\\tsentence\\tlabel'"));
  CHECK_THROWS_WITH(read_glue(rte, dir.write("empty.tsv", "")), Contains("empty file"));
  CHECK_THROWS_WITH(read_glue(rte, dir.write("head.tsv", head)), Contains("no examples after the header"));
  // CoLA has no header: a row of three columns is an error at its own line.
  const std::string cola = dir.write("cola.tsv", "gj04\t1\t\tGood.\ngj04\t1\tGood too.\n");
  CHECK_THROWS_WITH(read_glue(glue_task("cola"), cola),
                    Contains("cola.tsv:2: 3 columns, but CoLA's train/dev layout has 4 (4 columns and no header"));
  CHECK_THROWS_WITH(read_glue(glue_task("cola"), dir.write("cola2.tsv", "gj04\tyes\t\tGood.\n")),
                    Contains("cola2.tsv:1: label 'yes' is not one of CoLA's labels (0, 1)"));
  const std::string stsb = dir.write(
      "stsb.tsv", "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                  "0\tg\tf\t2012\t0\tnone\tnone\ta\tb\tfive\n");
  CHECK_THROWS_WITH(read_glue(glue_task("stsb"), stsb), Contains("stsb.tsv:2: the score 'five' is not a finite number"));
  // MNLI: a label column but no gold_label at the end.
  const std::string mnli = dir.write(
      "dev_matched.tsv", "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                         "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\n");
  CHECK_THROWS_WITH(read_glue(glue_task("mnli"), mnli), Contains("not a GLUE MNLI file"));
  CHECK_THROWS_WITH(read_glue(rte, dir.write("utf8.tsv", head + "0\ta\xff\tb\tentailment\n")),
                    Contains("utf8.tsv:2: invalid UTF-8"));
}

TEST_CASE("bad submission files: header, index order, labels, counts, each at file:line",
          "[downstream][glue][errors]") {
  ordo::test::TempDir dir("glue-bad-pred");
  const GlueSet rte = read("rte", "RTE/dev.tsv");
  auto submit = [&](const std::string& name, const std::string& text) {
    return read_glue_submission(dir.write(name, text), rte);
  };
  CHECK_THROWS_WITH(submit("h.tsv", "id\tlabel\n0\tentailment\n"),
                    Contains("h.tsv:1: a GLUE submission starts with the header 'index\\tprediction'; found 'id\\tlabel'"));
  CHECK_THROWS_WITH(submit("o.tsv", "index\tprediction\n0\tentailment\n2\tentailment\n1\tentailment\n"),
                    Contains("o.tsv:3: index '2', but prediction 2 is for the example at"));
  CHECK_THROWS_WITH(submit("l.tsv", "index\tprediction\n0\tentailment\n1\t1\n2\tentailment\n"),
                    Contains("l.tsv:3: prediction '1' is not one of RTE's labels (entailment, not_entailment)"));
  CHECK_THROWS_WITH(submit("m.tsv", "index\tprediction\n0\tentailment\n1\tentailment\n"),
                    Contains("m.tsv: 2 predictions for the 3 examples of"));
  CHECK_THROWS_WITH(submit("x.tsv", "index\tprediction\n0\tentailment\n1\tentailment\n2\tentailment\n3\tentailment\n"),
                    Contains("x.tsv:5: more predictions than the 3 examples"));
  CHECK_THROWS_WITH(submit("c.tsv", "index\tprediction\n0\tentailment\textra\n"), Contains("c.tsv:2: 3 columns"));
  const GlueSet stsb = read("stsb", "STS-B/dev.tsv");
  CHECK_THROWS_WITH(read_glue_submission(dir.write("s.tsv", "index\tprediction\n0\tnan\n"), stsb),
                    Contains("s.tsv:2: prediction 'nan' is not a finite number"));
}

TEST_CASE("skip_malformed_rows leaves out rows of the wrong width and lists their lines", "[downstream][glue]") {
  ordo::test::TempDir dir("glue-skip");
  const std::string qqp = dir.write("train.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
                                                 "0\t1\t2\tWhy?\tHow?\t0\n"
                                                 "\"\tWas it real?\t0\n"
                                                 "1\t3\t4\tWho?\tWhom?\t1\n");
  CHECK_THROWS_WITH(read_glue(glue_task("qqp"), qqp), Contains("train.tsv:3: 3 columns"));
  const GlueSet set = read_glue(glue_task("qqp"), qqp, GlueReadOptions{true});
  CHECK(set.skipped_lines == std::vector<int>{3});
  REQUIRE(set.examples.size() == 2);
  CHECK(set.examples[1].text_a == "Who?");
  CHECK(set.examples[1].line == 4);
}
