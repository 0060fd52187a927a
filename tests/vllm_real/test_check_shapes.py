"""What ``dsv4-launch check`` sends and reads, judged by the installed vLLM's own code (CPU):

- the probe's two requests validate as vLLM's ``ChatCompletionRequest``, and the fields it
  relies on (``return_token_ids``, ``chat_template_kwargs``, ``tool_choice``) are real fields
  of it, not ignored extras;
- every answer the replay server gives (``tests/fakes/replay_server.py``) validates as vLLM's
  ``ChatCompletionResponse``, and what vLLM itself serialises from it judges the same as the
  replay — so the field names check reads (``message.reasoning``, ``choices[0].token_ids``,
  ``usage.completion_tokens``) are the ones this release writes;
- vLLM's ``ModelList`` and ``ErrorResponse`` (the no-tool-parser 400, whose text is in this
  release's source) judge as the replay's;
- the markup and special tokens check looks for are the ones in this release's DeepSeek
  parsers and encoding.

Nothing is faked: vLLM's pydantic models and source files. No server is started.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from dsv4_launch.core.check import judge as sc
from tests.fakes import replay_server as rs


def _protocol(real_vllm):
    chat = importlib.import_module("vllm.entrypoints.openai.chat_completion.protocol")
    for name in ("vllm.entrypoints.serve.engine.protocol", "vllm.entrypoints.openai.engine.protocol"):
        try:
            engine = importlib.import_module(name)  # 0.29.0+ / 0.24.0–0.28.x
        except ImportError:
            continue
        if hasattr(engine, "ModelList"):
            return chat, engine
    pytest.fail("no ModelList in this vLLM's entrypoints")


def _judge(kind: str, doc: dict, status: int = 200):
    ex = sc.Exchange(status, json.dumps(doc).encode(), 0.5)
    found, _ = (sc.judge_tools if kind == "tools" else sc.judge_chat)(ex)
    return [(f.level, f.code) for f in found]


def test_the_probe_requests_are_vllms_chat_requests(real_vllm):
    chat, _ = _protocol(real_vllm)
    fields = chat.ChatCompletionRequest.model_fields
    for name in ("return_token_ids", "chat_template_kwargs", "tool_choice", "tools", "max_tokens", "temperature"):
        assert name in fields, name
    for body in (sc.chat_request(rs.MODEL), sc.tool_request(rs.MODEL)):
        request = chat.ChatCompletionRequest.model_validate(body)
        assert request.temperature == 0 and request.chat_template_kwargs == {"thinking": False}
    assert chat.ChatCompletionRequest.model_validate(sc.chat_request(rs.MODEL)).return_token_ids is True
    assert chat.ChatCompletionRequest.model_validate(sc.tool_request(rs.MODEL)).tool_choice == "auto"


@pytest.mark.parametrize("shape", sorted(set(rs.SHAPES) - {"answer-in-reasoning-content"}))
def test_every_replayed_answer_is_what_vllm_serialises(real_vllm, shape):
    chat, _ = _protocol(real_vllm)
    for kind, (status, body) in zip(("chat", "tools"), rs.SHAPES[shape]):
        if status != 200:
            continue
        dumped = json.loads(chat.ChatCompletionResponse.model_validate(body).model_dump_json())
        assert _judge(kind, dumped) == _judge(kind, body), (shape, kind)


def test_vllm_names_the_reasoning_field_reasoning(real_vllm):
    chat, _ = _protocol(real_vllm)
    message = json.loads(chat.ChatMessage(role="assistant", content=None, reasoning=rs.COUNT).model_dump_json())
    assert message["reasoning"] == rs.COUNT and "reasoning_content" not in message
    body = rs.completion(None, reasoning=rs.COUNT, finish="stop")
    dumped = json.loads(chat.ChatCompletionResponse.model_validate(body).model_dump_json())
    assert ("fail", "answer-in-reasoning") in _judge("chat", dumped)


def test_model_list_and_the_no_tool_parser_error_are_vllms(real_vllm):
    _, engine = _protocol(real_vllm)
    models = engine.ModelList(data=[engine.ModelCard(id=rs.MODEL, root=rs.ROOT, max_model_len=65536)])
    found, card = sc.judge_models(sc.Exchange(200, models.model_dump_json().encode(), 0.01), None)
    assert card["id"] == rs.MODEL and found[0].text == f"/v1/models: {rs.MODEL} (max_model_len 65536)"
    error = engine.ErrorResponse(error=engine.ErrorInfo(message=rs.NO_TOOL_PARSER, type="BadRequestError", code=400))
    found, _ = sc.judge_tools(sc.Exchange(400, error.model_dump_json().encode(), 0.01))
    assert [(f.level, f.code) for f in found] == [("note", "no-tool-parser")]
    # ... and that text is what this release raises (the literal is split over two lines there)
    import vllm

    root = Path(vllm.__file__).parent
    sources = [root / "renderers" / "online_renderer.py", root / "entrypoints" / "serve" / "render" / "serving.py"]
    text = "".join(p.read_text() for p in sources if p.exists())
    assert ('"auto" tool choice requires ' in text
            and "--enable-auto-tool-choice and --tool-call-parser to be set" in text)


def test_the_markup_and_special_tokens_are_this_releases(real_vllm):
    import vllm

    root = Path(vllm.__file__).parent
    encoding = (root / "tokenizers" / "deepseek_v4_encoding.py").read_text()
    assert f'bos_token: str = "{rs.BOS}"' in encoding and 'dsml_token: str = "｜DSML｜"' in encoding
    assert sc.only_special_tokens(rs.BOS * 4)
    v3 = (root / "tool_parsers" / "deepseekv3_tool_parser.py").read_text()
    for mark in ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"):
        assert mark in v3 and sc.markup_in(mark) == mark
    dsml = [p for p in (root / "parser" / "deepseek_v4.py", root / "tool_parsers" / "deepseekv4_tool_parser.py")
            if p.exists()]
    assert dsml and all("｜DSML｜" in p.read_text() for p in dsml)
    assert sc.markup_in(rs.DSML_CALL) == "｜DSML｜"
