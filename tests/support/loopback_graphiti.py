"""Deterministic answers to graphiti-core 0.31.2's structured-output calls, for the loopback
OpenAI-compatible server of tests/support/loopback_openai.py.

graphiti's generic OpenAI client asks for `json_schema` structured output and names the schema
(the pydantic model it parses the reply into); in JSON mode (`structured_output=json_object`)
it writes the schema, titled by the same name, at the end of its prompt. `graphiti_facts`
answers each kind by reading the sections graphiti's prompts carry, as a model would:

- `ExtractedEntities`: each speaker of the episode's `speaker: text` lines (`<CURRENT MESSAGE>`)
  and what they talk about (`topic_name` of their first line);
- `ExtractedEdges`: one fact per speaker, speaker -> topic, `fact_sentence(speaker, texts)`:
  the start of their lines of the episode, valid from its reference time
  (`<REFERENCE_TIME>`). One fact
  per speaker rather than per line keeps a long history's graph small (graphiti compares each
  new fact with the facts it already holds, so ingestion grows with their square);
- `NodeResolutions`: no entity is a duplicate of another (names that match exactly are
  merged by graphiti itself, without asking);
- `EdgeDuplicate`: no duplicate and no contradicted fact;
- `SummarizedEntities`: no summary to update.

Any other schema is an error (the server answers 500 with the message), so a graphiti call
this script does not know shows up instead of being answered wrongly.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "fact_sentence",
    "graphiti_facts",
    "schema_name",
    "section",
    "speakers",
    "topic_name",
]

_LINE = re.compile(r"^(?P<speaker>[^:\n]{1,80}): (?P<text>.+)$")


#: What graphiti appends to the last message in `structured_output=json_object` mode, before
#: the schema (JSON mode: the server does not enforce it).
JSON_MODE_ASK = "\n\nRespond with a JSON object in the following format:\n\n"


def schema_name(body: dict[str, Any]) -> str | None:
    """The name of the schema a request asks for: its json_schema's, or in JSON mode the title
    of the schema written into the prompt (None for any other request)."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return str(fmt["json_schema"]["name"])
    if fmt.get("type") == "json_object":
        prompt = str((body.get("messages") or [{}])[-1].get("content", ""))
        at = prompt.rfind(JSON_MODE_ASK)
        if at >= 0:
            return str(json.loads(prompt[at + len(JSON_MODE_ASK) :])["title"])
    return None


def section(body: dict[str, Any], tag: str) -> str:
    """The text between `<tag>` and `</tag>` in the last user message."""
    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if not user:
        raise ValueError("the request has no user message")
    prompt = str(user[-1].get("content", ""))
    m = re.search(rf"<{re.escape(tag)}>\n(.*?)\n</{re.escape(tag)}>", prompt, re.S)
    if m is None:
        raise ValueError(f"the prompt has no <{tag}> section")
    return m.group(1)


def topic_name(text: str) -> str:
    """The entity a line is about: its first five words, without punctuation."""
    words = re.findall(r"[\w']+", text)
    return " ".join(words[:5]) or "something"


#: A fact's length in words: short facts keep the local embedder's share of ingestion small.
FACT_WORDS = 30


def fact_sentence(speaker: str, texts: list[str]) -> str:
    """The fact extracted from one speaker's lines of an episode: their first `FACT_WORDS`
    words."""
    words = " ".join(texts).split()[:FACT_WORDS]
    return f"{speaker} said: " + " ".join(words)


def speakers(episode: str) -> dict[str, list[str]]:
    """Each speaker's lines of an episode, speakers in the order they first speak."""
    found: dict[str, list[str]] = {}
    for line in episode.splitlines():
        m = _LINE.match(line.strip())
        if m:
            found.setdefault(m["speaker"].strip(), []).append(m["text"].strip())
    return found


def _reference_time(body: dict[str, Any]) -> str:
    stamp = section(body, "REFERENCE_TIME").split("#", 1)[0].strip()
    day, time = stamp.split(" ")[:2]
    return f"{day}T{time[:8]}Z"


def graphiti_facts(body: dict[str, Any]) -> str:
    """The reply to one graphiti call (ValueError for a call it does not know)."""
    name = schema_name(body)
    if name == "ExtractedEntities":
        names: list[str] = []
        for speaker, texts in speakers(section(body, "CURRENT MESSAGE")).items():
            names += [n for n in (speaker, topic_name(texts[0])) if n not in names]
        entities = [{"name": n, "entity_type_id": 0} for n in names]
        return json.dumps({"extracted_entities": entities})
    if name == "ExtractedEdges":
        valid_at = _reference_time(body)
        edges = [
            {
                "source_entity_name": speaker,
                "target_entity_name": topic_name(texts[0]),
                "relation_type": "SAID",
                "fact": fact_sentence(speaker, texts),
                "valid_at": valid_at,
                "invalid_at": None,
            }
            for speaker, texts in speakers(section(body, "CURRENT_MESSAGE")).items()
        ]
        return json.dumps({"edges": edges})
    if name == "NodeResolutions":
        new = json.loads(section(body, "ENTITIES"))
        resolutions = [
            {"id": e["id"], "name": e["name"], "duplicate_candidate_id": -1} for e in new
        ]
        return json.dumps({"entity_resolutions": resolutions})
    if name == "EdgeDuplicate":
        return json.dumps({"duplicate_facts": [], "contradicted_facts": []})
    if name == "SummarizedEntities":
        return json.dumps({"summaries": []})
    raise ValueError(f"loopback_graphiti: no scripted answer for schema {name!r}")
