"""`locomo_dialogue`: LoCoMo's dialogue generation task on Inspect
(benchmarks/locomo_dialogue/README.md#protocol).

For a seeded set of held-out turns the model writes that speaker's next message from the
history (context modes and selection rule: `benchmarks/locomo_dialogue`). Scored against the
real turn with BLEU-1/2, ROUGE-L and BERTScore (its `scoring` module); the BERTScore
model is loaded once, when the task is built, so a missing model fails before any model call.

With `images=true` the most recent photos of the history are sent as image content. Each image
is fetched by the `attach_images` solver (once per run and URL) and inlined as a data URI; an
image that cannot be fetched is replaced by its caption, logged, and counted in the
`image_fallbacks` score (the original LoCoMo images are web URLs, some long gone).
"""

from __future__ import annotations

import base64
import functools
import logging
import urllib.request

import anyio
from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, Content, ContentImage, ContentText, GenerateConfig
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from memevals.benchmarks.locomo import memory as locomo_memory
from memevals.benchmarks.locomo.data import LOCOMO_FILE
from memevals.benchmarks.locomo_dialogue.memory import (
    DIALOGUE_CONTEXT_MODES,
    DIALOGUE_RETRIEVAL_UNIT,
    ImagePart,
    caption_text,
)
from memevals.benchmarks.locomo_dialogue.prompts import DialogueItem
from memevals.benchmarks.locomo_dialogue.samples import DialogueOptions, build
from memevals.benchmarks.locomo_dialogue.scoring import bertscore as bertscore_of
from memevals.benchmarks.locomo_dialogue.scoring import (
    check_bertscore_options,
    clean_reply,
    corpus_bleu_of_rows,
    get_bertscorer,
    overlap_scores,
)
from memevals.core.memory_options import MemoryOptions
from memevals.inspect_tasks.common import count, memevals_task, to_dataset, uncertainty_metrics

logger = logging.getLogger(__name__)

__all__ = [
    "attach_images",
    "dialogue_bertscore",
    "dialogue_images",
    "dialogue_overlap",
    "fetch_image",
    "locomo_dialogue",
]

_IMAGE_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


class ImageUnavailable(Exception):
    """The image could not be fetched or is not an image."""


def fetch_image(url: str, timeout: float = 10.0, max_bytes: int = 20_000_000) -> str:
    """The image at `url` as a data URI; raises ImageUnavailable on any failure."""
    request = urllib.request.Request(url, headers={"User-Agent": "memevals/0.1 (LoCoMo images)"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            data = resp.read(max_bytes + 1)
            declared = (resp.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    except Exception as exc:  # DNS, refused, timeout, HTTP 404/410: all mean "gone"
        raise ImageUnavailable(f"{type(exc).__name__}: {exc}") from exc
    if len(data) > max_bytes:
        raise ImageUnavailable(f"larger than {max_bytes} bytes")
    sniffed = next((m for magic, m in _IMAGE_MAGIC.items() if data.startswith(magic)), None)
    if sniffed is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        sniffed = "image/webp"
    mime = sniffed or (declared if declared.startswith("image/") else None)
    if mime is None:
        raise ImageUnavailable(f"not an image (Content-Type {declared or 'missing'!r})")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


@solver
def attach_images(timeout: float = 10.0, max_bytes: int = 20_000_000) -> Solver:
    """Put the fetched image in place of each photo's caption; keep the caption when the image
    cannot be fetched.

    The sample input carries the caption text (so it is complete without this solver, and
    Inspect does not try to download the URLs itself); ``metadata["images"]`` says which part
    of the user message holds which photo's caption. Downloads are cached per URL for the
    run. The sample's store records the dia ids of the images sent (``images_sent``) and of
    those that fell back to their caption (``image_fallbacks``).
    """
    cache: dict[str, str | None] = {}

    async def fetch(url: str) -> str | None:
        if url not in cache:
            try:
                cache[url] = await anyio.to_thread.run_sync(
                    functools.partial(fetch_image, url, timeout, max_bytes)
                )
            except ImageUnavailable as exc:
                logger.warning(
                    "locomo_dialogue: image %s could not be fetched (%s); its caption is used",
                    url,
                    exc,
                )
                cache[url] = None
        return cache[url]

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        message = state.messages[-1]
        content = list(message.content) if not isinstance(message.content, str) else []
        sent: list[str] = []
        fallbacks: list[str] = []
        for info in state.metadata["images"]:
            at = int(info["part"])
            part = content[at] if at < len(content) else None
            if not isinstance(part, ContentText) or part.text != caption_text(
                ImagePart(info["url"], info["caption"], info["dia_id"])
            ):
                raise ValueError(
                    f"sample {state.sample_id}: part {at} of the prompt is not the caption of "
                    f"image {info['dia_id']}"
                )
            data = await fetch(str(info["url"]))
            if data is None:
                fallbacks.append(info["dia_id"])
            else:
                sent.append(info["dia_id"])
                content[at] = ContentImage(image=data)
        if state.metadata["images"]:
            message.content = content
        state.store.set("images_sent", sent)
        state.store.set("image_fallbacks", fallbacks)
        return state

    return solve


# ---------------------------------------------------------------------------------------------
# Scorers


@metric
def corpus_bleu_metric(order: int) -> Metric:
    """Corpus BLEU-`order` from the per-reply n-gram statistics in the score metadata."""

    def compute(scores: list[SampleScore]) -> float:
        rows = [s.score.metadata["bleu_stats"] for s in scores if s.score.metadata]
        return corpus_bleu_of_rows(rows, order)

    return compute


#: Mean, conversation-clustered standard error and 95 % interval (the turns
#: of one conversation share its history: benchmarks/locomo_dialogue/README.md#standard-errors).
_UNCERTAINTY: list[Metric] = uncertainty_metrics(by_category=False)


def _prediction(state: TaskState) -> str:
    md = state.metadata
    return clean_reply(state.output.completion, str(md["speaker"]), str(md["other_speaker"]))


@scorer(
    metrics={
        "bleu1": [*_UNCERTAINTY, corpus_bleu_metric(1)],
        "bleu2": [*_UNCERTAINTY, corpus_bleu_metric(2)],
        "rougeL": _UNCERTAINTY,
    }
)
def dialogue_overlap() -> Scorer:
    """Sentence BLEU-1/2 (mean, plus corpus BLEU) and ROUGE-L of the cleaned reply."""

    async def score(state: TaskState, target: Target) -> Score:
        prediction = _prediction(state)
        reference = target.text
        values, stats = overlap_scores(prediction, reference)
        return Score(
            value=dict(values),
            answer=prediction,
            explanation=f"reference: {reference!r}",
            metadata={"reply": state.output.completion, "bleu_stats": stats.as_row()},
        )

    return score


@scorer(metrics={"bertscore_f1": _UNCERTAINTY})
def dialogue_bertscore(model: str | None = None, num_layers: int | None = None) -> Scorer:
    """BERTScore F1 of the cleaned reply (precision and recall in the metadata).

    The scorer object is shared by every sample and every task built in the process.
    """
    bert = get_bertscorer(model, num_layers)

    async def score(state: TaskState, target: Target) -> Score:
        prediction = _prediction(state)
        [result] = bertscore_of([prediction], [target.text], bert)
        return Score(
            value={"bertscore_f1": result.f1},
            answer=prediction,
            metadata={
                "precision": result.precision,
                "recall": result.recall,
                "model": bert.model_type,
                "num_layers": bert.num_layers,
            },
        )

    return score


@scorer(metrics={"images_sent": [count()], "image_fallbacks": [count()]})
def dialogue_images() -> Scorer:
    """How many images were sent, and how many fell back to their caption (run totals)."""

    async def score(state: TaskState, target: Target) -> Score:
        sent: list[str] = state.store.get("images_sent", [])
        fallbacks: list[str] = state.store.get("image_fallbacks", [])
        return Score(
            value={"images_sent": len(sent), "image_fallbacks": len(fallbacks)},
            metadata={"images_sent": sent, "image_fallbacks": fallbacks},
        )

    return score


# ---------------------------------------------------------------------------------------------
# Task


def _image_sample(item: DialogueItem) -> Sample:
    """A sample whose history can carry photos: one user message of text parts, each photo a
    caption part that `attach_images` replaces by the image (its index goes into metadata)."""
    content: list[Content] = []
    photos = [dict(info) for info in item.metadata["images"]]
    pending = iter(photos)
    for p in item.parts:
        if isinstance(p, ImagePart):
            info = next(pending)
            assert info["dia_id"] == p.dia_id
            info["part"] = len(content)
            content.append(ContentText(text=caption_text(p)))
        elif p:
            content.append(ContentText(text=p))
    content.append(ContentText(text=f"\n\n{item.user}"))
    return Sample(
        id=item.id,
        input=[ChatMessageUser(content=content)],
        target=item.target,
        metadata={**item.metadata, "images": photos},
    )


@memevals_task(
    option_defaults={
        "max_context_tokens": locomo_memory.DEFAULT_MAX_CONTEXT_TOKENS,
        "retrieval_unit": DIALOGUE_RETRIEVAL_UNIT,
        "top_k": locomo_memory.DEFAULT_TOP_K,
        "retriever": locomo_memory.DEFAULT_RETRIEVER,
    },
    option_values={
        "context": DIALOGUE_CONTEXT_MODES,
        "retrieval_unit": (
            DIALOGUE_RETRIEVAL_UNIT,
            *(u for u in locomo_memory.RETRIEVAL_UNITS if u != DIALOGUE_RETRIEVAL_UNIT),
        ),
    },
)
def locomo_dialogue(
    context: str = "full",
    turns_per_conversation: int = 20,
    seed: int = 0,
    conversations: str | None = None,
    max_context_tokens: int | None = None,
    retrieval_unit: str | None = None,
    top_k: int | None = None,
    retriever: str | None = None,
    embedding_model: str | None = None,
    images: bool = False,
    max_images: int = 8,
    image_timeout: float = 10.0,
    bertscore: bool = True,
    bertscore_model: str | None = None,
    bertscore_layers: int | None = None,
    max_tokens: int = 128,
    data_dir: str | None = None,
    uncertainty: str = "default",
) -> Task:
    """LoCoMo dialogue generation: write a held-out turn from the history.

    Args:
        turns_per_conversation: held-out turns drawn per conversation (0 = every eligible turn).
        seed: seed of the draw.
        conversations: comma-separated conversation ids (e.g. conv-26); default all 10.
        images: send the history's photos as image content (fetched from their web URLs; an
            unreachable one falls back to its caption); default: captions, as in the paper.
        max_images: images=true only: how many of the most recent photos are sent as images.
        image_timeout: seconds to wait for each image download.
        bertscore: also report BERTScore F1.
        bertscore_model: BERTScore model: a hub id, a local folder or all-MiniLM-L6-v2;
            default the library's default for English (roberta-large).
        bertscore_layers: which layer's embeddings BERTScore uses (required for models
            bert-score does not know, e.g. 6 for all-MiniLM-L6-v2).
        max_tokens: the reply's token limit.
        data_dir: folder holding locomo/locomo10.json (overrides MEMEVALS_DATA_DIR).
    """
    options = DialogueOptions(
        conversations=conversations,
        turns_per_conversation=turns_per_conversation,
        seed=seed,
        images=images,
        max_images=max_images,
        memory=MemoryOptions.from_mapping(locals()),
        data_dir=data_dir,
    )
    if image_timeout <= 0:
        raise ValueError(f"image_timeout must be positive, got {image_timeout!r}")
    check_bertscore_options(bertscore, bertscore_model, bertscore_layers)
    scorers = [dialogue_overlap()]
    if bertscore:  # loads the model now: fails before any model call
        scorers.append(dialogue_bertscore(bertscore_model, bertscore_layers))
    items, memory_log = build(options)
    # Without images the history is the item's system text (photos as captions), as in lm-eval.
    dataset = (
        MemoryDataset(
            [_image_sample(item) for item in items], name="locomo_dialogue", shuffled=False
        )
        if images
        else to_dataset(items, "locomo_dialogue")
    )
    solvers: list[Solver] = [generate()]
    if images:
        solvers.insert(0, attach_images(timeout=image_timeout))
        scorers.append(dialogue_images())
    return Task(
        dataset=dataset,
        solver=solvers,
        scorer=scorers,
        config=GenerateConfig(max_tokens=max_tokens),
        metadata={
            "benchmark": "locomo",
            "task": "dialogue",
            "turns_per_conversation": turns_per_conversation,
            "seed": seed,
            "images": images,
            "max_images": max_images if images else None,
            "bertscore_model": bertscore_model,
            "bertscore_layers": bertscore_layers,
            "memory": memory_log,
            "data_sha256": LOCOMO_FILE.sha256,
        },
    )


__all_tasks__ = ["locomo_dialogue"]
