"""Photos in a prompt, sent as images when they can be fetched, naming no benchmark.

A sample's single user message is a list of text parts; each photo is a caption part (so the
input is complete without images, and Inspect never tries to download a raw URL itself), and
the sample's metadata under `IMAGES_KEY` says which part holds which photo: entries with
`part` (its index), `url`, `caption` and the photo's id (under the solver's `id_key`). The
`attach_images` solver fetches each image (once per run and URL), inlines it as a data URI in
place of its caption, and keeps the caption when the image cannot be fetched (logged, and
counted by `image_counts`).
"""

from __future__ import annotations

import base64
import functools
import logging
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, Content, ContentImage, ContentText
from inspect_ai.scorer import Score, Scorer, Target
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from memevals.core.prompt_item import PromptItem
from memevals.inspect_tasks.task_parts import with_solver

logger = logging.getLogger(__name__)

__all__ = [
    "IMAGES_KEY",
    "ImageUnavailable",
    "attach_images",
    "fetch_image",
    "image_counts",
    "photo_sample",
    "with_photos",
]

#: The sample-metadata key of a sample's photo entries.
IMAGES_KEY = "images"

_IMAGE_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


class ImageUnavailable(Exception):
    """The image could not be fetched or is not an image."""


def fetch_image(url: str, timeout: float = 10.0, max_bytes: int = 20_000_000) -> str:
    """The image at `url` as a data URI.

    Args:
        url: where the image is.
        timeout: seconds to wait.
        max_bytes: the largest image taken.

    Returns:
        The data URI; raises ImageUnavailable on any failure.
    """
    request = urllib.request.Request(url, headers={"User-Agent": "memevals/0.1 (images)"})
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


def _caption_part(state: TaskState, content: list[Content], info: Mapping[str, Any]) -> int:
    """The index of the text part holding the photo's caption (checked)."""
    at = int(info["part"])
    part = content[at] if at < len(content) else None
    if not isinstance(part, ContentText) or str(info["caption"]) not in part.text:
        raise ValueError(
            f"sample {state.sample_id}: part {at} of the prompt is not the caption of image "
            f"{info['url']}"
        )
    return at


@solver
def attach_images(timeout: float = 10.0, max_bytes: int = 20_000_000, id_key: str = "id") -> Solver:
    """Put the fetched image in place of each photo's caption; keep the caption when the image
    cannot be fetched. The sample's store records the ids of the images sent (`images_sent`)
    and of those that fell back to their caption (`image_fallbacks`).

    Args:
        timeout: seconds to wait for each image.
        max_bytes: the largest image sent.
        id_key: the key of a photo's id in its metadata entry.

    Returns:
        The solver.
    """
    cache: dict[str, str | None] = {}

    async def fetch(url: str) -> str | None:
        if url not in cache:
            try:
                cache[url] = await anyio.to_thread.run_sync(
                    functools.partial(fetch_image, url, timeout, max_bytes)
                )
            except ImageUnavailable as exc:
                logger.warning("image %s could not be fetched (%s); its caption is used", url, exc)
                cache[url] = None
        return cache[url]

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        message = state.messages[-1]
        content = list(message.content) if not isinstance(message.content, str) else []
        sent: list[str] = []
        fallbacks: list[str] = []
        for info in state.metadata[IMAGES_KEY]:
            at = _caption_part(state, content, info)
            data = await fetch(str(info["url"]))
            if data is None:
                fallbacks.append(info[id_key])
            else:
                sent.append(info[id_key])
                content[at] = ContentImage(image=data)
        if state.metadata[IMAGES_KEY]:
            message.content = content
        state.store.set("images_sent", sent)
        state.store.set("image_fallbacks", fallbacks)
        return state

    return solve


def image_counts() -> Scorer:
    """The score function of an image-count scorer: how many images a sample sent and how many
    fell back to their caption (`attach_images`), the ids in the score's metadata.

    Returns:
        The function a `@scorer` returns.
    """

    async def score(state: TaskState, target: Target) -> Score:
        sent: list[str] = state.store.get("images_sent", [])
        fallbacks: list[str] = state.store.get("image_fallbacks", [])
        return Score(
            value={"images_sent": len(sent), "image_fallbacks": len(fallbacks)},
            metadata={"images_sent": sent, "image_fallbacks": fallbacks},
        )

    return score


def photo_sample(
    item: PromptItem, texts: Sequence[str], photos: Sequence[Mapping[str, Any]]
) -> Sample:
    """A sample of one user message of text parts whose photos `attach_images` can send.

    Args:
        item: the prompt item (id, target, metadata).
        texts: the message's text parts, each photo's caption among them.
        photos: the photo entries (`part`, `url`, `caption`, the id).

    Returns:
        The sample (the entries in its metadata under `IMAGES_KEY`).
    """
    content: list[Content] = [ContentText(text=text) for text in texts]
    return Sample(
        id=item.id,
        input=[ChatMessageUser(content=content)],
        target=item.target,
        metadata={**item.metadata, IMAGES_KEY: [dict(p) for p in photos]},
    )


def with_photos(built: Task, samples: Sequence[Sample], solver: Solver) -> Task:
    """`built` with `samples` as its dataset (same name) and `solver` (an `attach_images`)
    before generating.

    Args:
        built: the task (from `task_from_build`).
        samples: its samples with photos (`photo_sample`).
        solver: the image solver.

    Returns:
        The same task.
    """
    built.dataset = MemoryDataset(list(samples), name=built.dataset.name, shuffled=False)
    return with_solver(built, [solver, generate()])
