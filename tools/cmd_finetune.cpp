// `ordo finetune`: fine-tunes a pretrained encoder on a GLUE task or SQuAD
// (train/finetune.h).
#include "tools/cli.h"
#include "tools/ranks.h"
#include "train/finetune.h"
#include "train/pretrain.h"

namespace {

using namespace ordo;

int finetune(const std::vector<std::string>& argv, parallel::Communicator* comm) {
  cli::Args args(argv, {"checkpoint", "task", "data", "out", "config", "set", "seeds", "lr", "vocab", "init-positions-from",
                  "worker"},
                 {"overwrite", "quiet", "from-scratch", "new-head"});
  train::FinetuneOptions o;
  o.checkpoint = args.required("checkpoint");
  o.task = args.required("task");
  o.data = args.required("data");
  o.out = args.required("out");
  o.vocab = args.str("vocab", "");
  o.overwrite = args.has("overwrite");
  o.quiet = args.has("quiet");
  o.from_scratch = args.has("from-scratch");
  o.new_head = args.has("new-head");
  o.init_positions_from = args.str("init-positions-from", "");
  o.worker_run = args.str("worker", "");
  o.comm = comm;
  // --seeds is a shorthand for --set train.seeds, applied after the other --set; --lr replaces the config's
  // learning rate (train.lr) or grid (train.learning_rates).
  std::vector<std::string> overrides = args.all("set");
  if (args.has("seeds")) overrides.push_back("train.seeds=" + std::to_string(args.integer("seeds", 1, 1, 1000)));
  const std::vector<double> learning_rates = args.numbers("lr", 1e-12, 10);
  const std::string where = args.has("config") ? args.str("config", "") : "the fine-tuning defaults";
  const json::Value base = args.has("config") ? train::read_config_file(where, &o.config_files) : json::Value::object();
  const train::FinetuneConfig config = train::parse_finetune_config(base, overrides, where, learning_rates);
  const train::FinetuneSummary summary = train::finetune(config, o);
  return summary.interrupted ? 130 : 0;
}

int run(const std::vector<std::string>& argv) {
  return tools::run_on_every_rank("ordo finetune", [&](parallel::Communicator* comm) { return finetune(argv, comm); });
}

cli::Register command(
    {"finetune", "fine-tune a pretrained encoder on a GLUE task or SQuAD, with the official dev metrics",
     "--checkpoint DIR|RUN_DIR --task NAME --data DIR --out DIR [--config FILE.json] [--set key=value ...]\n"
     "      [--seeds N] [--lr A,B,C] [--vocab FILE] [--from-scratch [--set model.KEY=V ...]\n"
     "      [--init-positions-from CHECKPOINT|RUN]] [--new-head] [--overwrite] [--quiet]\n"
     "  NAME: cola sst2 mrpc stsb qqp mnli qnli rte wnli | squad (v1.1) | squad2 (v2.0) | senteval\n"
     "  --data: the task's folder as GLUE ships it (train.tsv, dev.tsv; MNLI dev_matched.tsv and\n"
     "    dev_mismatched.tsv; test files, when there, are predicted into GLUE submission files) or\n"
     "    SQuAD's (train-v1.1.json + dev-v1.1.json, train-v2.0.json + dev-v2.0.json, or train.json + dev.json);\n"
     "    senteval: a SentEval probing file (partition tr/va/te, label, sentence per line; its labels the\n"
     "    classes, va picking the best epoch, te evaluated beside) or a folder holding one .txt file\n"
     "  --checkpoint: an ordo checkpoint or run (MLM, MLM+NSP, or causal: its classifier reads the last\n"
     "    real token), or a HuggingFace BERT or RoBERTa checkpoint (with or without its MLM head, with or\n"
     "    without a pooler: a missing pooler is initialised and said so)\n"
     "  --vocab FILE: the tokenizer (vocab.txt, vocab.json with merges.txt beside it, tokenizer.json, or a\n"
     "    folder holding one); default: the checkpoint's own, else its run's\n"
     "  Defaults: BERT's recipe (AdamW lr 3e-5, warm-up 10% then linear decay, batch 32, 3 epochs,\n"
     "    max_seq_length 128); configs/finetune/ holds the base grid and a recipe for tiny/mini models.\n"
     "  --seeds N runs seeds seed..seed+N-1; --lr A,B,C a learning-rate grid: results.json gives each run's\n"
     "    best epoch and, per learning rate, mean, std (n-1) and median over the seeds.\n"
     "  --from-scratch: the checkpoint's config and vocabulary with random weights (the baseline\n"
     "    that shows what pretraining brings). --set model.KEY=V (a run config's model keys) reshapes that\n"
     "    fresh model: --set model.num_hidden_layers=1 for Wang & Chen 2020's 1-layer classifier.\n"
     "  --init-positions-from CHECKPOINT|RUN (with --from-scratch): the fresh model's learned absolute\n"
     "    position table starts as that model's (an ordo run's ape_learned, its ape_sin as computed, HF's\n"
     "    BERT, RoBERTa from row 2, GPT-2), then trains with the rest (Wang & Chen 2020, Table 3). Refused,\n"
     "    naming what does not fit, when the source adds no table at the input, has another width than\n"
     "    model.hidden_size, or fewer rows than train.max_seq_length; the header says what was copied.\n"
     "  results.json of a classification task: each run's dev accuracy by length in words, in four bins\n"
     "    cut at the dataset's mean -/+ one standard deviation, with each bin's n (best_by_length).\n"
     "  --new-head: a fine-tuned checkpoint's task head (e.g. MNLI's 3-label classifier) left out and a\n"
     "    new one initialised for this task.\n"
     "  The same command on an --out holding this grid continues it: finished runs are kept, the others\n"
     "    run again; results.json is written after every run. Another grid there needs --overwrite.\n"
     "  train.parallel_runs N: N runs of the grid at once on the CPU, each a process of train.threads\n"
     "    threads (0 there: the cores shared evenly); 0: as many as the cores hold. Each run's results are\n"
     "    those it has alone with the same threads; runs x threads beyond the cores is refused.\n"
     "    (--worker NAME is how such a grid starts its runs: one run, into the folder --out.)\n"
     "  See `ordo help config` for every key (train.*, tokenizer.lower_case, squad.*, model.*).\n"
     "  Under mpirun -np N: data parallel, each batch shared among the N processes; rank 0 evaluates and writes.",
     run});

}  // namespace
