"""#36: what a page-long entry costs against a one-liner, `zk add --wait` on the bundled models.

    flock /tmp/zk-cpu.lock python -m bench.entry_length --repeats 3

In one process and one temporary home (the models loaded once, as the worker holds them), each round adds
a ~100-character and a ~900-character entry (Korean and English, from `bench/data/diary-long.json`'s kind
of life but not its text) and processes each at once, as `zk add --wait` does: the write with the entry's
passages and their embeddings, construction, linking and evolution, and the words journal answers
bridge across languages (the idle worker's `warm_words`). Reported: the median wall seconds of
each length, their ratio (the issue's bound: <= 2.5x), and the passages written. Ratios, not seconds, are
what carry to another machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

SHORT = ["퇴근길에 우유랑 계란을 샀다. 내일은 쉬는 날.", "Walked the dog before work; the park was empty and cold."]
LONG = [
    ("오늘은 새벽 다섯 시에 출근했다. 오븐 예열부터 시작해서 첫 반죽을 여섯 시 전에 넣었다. 사장님이 이번 주부터 "
     "주말 케이크 주문을 내가 맡으라고 하셨다. 점심은 가게 뒤 김밥집에서 먹었다. 오후에 엄마한테 전화가 왔는데 "
     "다음 주 토요일에 올라오신다고 한다. 반찬을 잔뜩 싸 오시겠지. 퇴근하고 강아지를 데리고 천변을 한 바퀴 "
     "걸었다. 어제 밤에 토했던 게 걱정됐는데 오늘은 밥도 잘 먹고 기운도 괜찮아 보인다. 동물병원은 일단 안 가도 "
     "될 것 같다. 저녁에는 가계부를 정리했다. 이번 달 관리비가 18만 원, 통신비가 5만 4천 원. 적금은 다음 달부터 "
     "월 40만 원으로 올리기로 했다. 자기 전에 도예 수업에서 만든 컵 사진을 동생한테 보냈더니 손잡이가 삐뚤다고 "
     "놀렸다. 다음 주 수요일 수업에서는 유약을 바른다. 내일은 쉬는 날이니까 빨래부터 해야겠다. 창밖에 비가 "
     "조금씩 오기 시작했다."),
    ("Long day. The first bake went in at six and the croissants came out even for once, so the new butter "
     "sheet is working. My manager asked me to take over the weekend cake orders from next month, which means "
     "Saturdays until three. At lunch I called the landlord about the dripping tap; he says a plumber comes "
     "on Thursday between ten and noon, so I swapped shifts with Min. After work I took the dog along the "
     "river path. She threw up last night and I was worried, but today she ate everything and pulled on the "
     "lead like always, so no vet for now. In the evening I did the budget: rent 520,000 won, phone 54,000, "
     "and I moved the monthly savings up to 400,000 from next month. My brother texted that his second "
     "interview is on the twelfth; I told him to sleep early the night before. Pottery on Wednesday: we "
     "glaze the cups. It started raining just as I sat down to write this."),
]


def measure(repeats: int) -> dict:
    from zettel_amem.backends.embed import load_embedder
    from zettel_amem.backends.llm.llama import load_llm
    from zettel_amem.memory import Memory

    embedder, llm = load_embedder(), load_llm("qwen2.5-0.5b")
    os.environ["ZK_CACHE_DIR"] = tempfile.mkdtemp()  # after the models: no word vectors from an earlier run
    seconds: dict[str, list[float]] = {"short": [], "long": []}
    passages: dict[str, list[int]] = {"short": [], "long": []}
    with tempfile.TemporaryDirectory() as home:
        memory = Memory(Path(home), llm=llm, embedder=embedder)
        memory.process(memory.add("warm up the store and the models").id)
        for round_ in range(repeats):
            for label, texts in (("short", SHORT), ("long", LONG)):
                for text in texts:
                    start = time.perf_counter()
                    note = memory.add(f"{text} ({round_})", f"2026-05-{round_ + 1:02d}T21:00")
                    memory.process(note.id)
                    memory.warm_words([note.id])  # the worker's idle step: the entry's words for journal answers
                    seconds[label].append(time.perf_counter() - start)
                    passages[label].append(len(memory.store.get(note.id).passages or []))
    short, long = statistics.median(seconds["short"]), statistics.median(seconds["long"])
    return {"repeats": repeats, "short_chars": [len(t) for t in SHORT], "long_chars": [len(t) for t in LONG],
            "short_median_s": round(short, 2), "long_median_s": round(long, 2), "ratio": round(long / short, 2),
            "passages_long": passages["long"][:2], "seconds": {k: [round(x, 2) for x in v] for k, v in seconds.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.repeats), ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
