"""vllm_cli/engine_args: vLLM's EngineArgs read into the replica's ServeArgs, the plugin's source
of arguments. Faked: the EngineArgs class (a dataclass shaped as vLLM's: config objects with
defaults, an enum, a callable, a credential); the option table is a real one."""

from __future__ import annotations

import dataclasses
import enum

from dsv4_launch.vllm_cli.engine_args import plain, read_engine_args
from dsv4_launch.vllm_cli.option_table import load_table

TABLE = load_table("0.33.0")


class Backend(enum.Enum):
    FLASHINFER_MLA_SPARSE_DSV4 = 1


@dataclasses.dataclass
class AttentionConfig:
    backend: object = None
    indexer_kv_dtype: str = "fp8"


@dataclasses.dataclass
class EngineArgs:
    model: str = "Qwen/Qwen3-0.6B"
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    attention_config: AttentionConfig = dataclasses.field(default_factory=AttentionConfig)
    attention_backend: object = None
    speculative_config: dict | None = None
    hf_overrides: object = dataclasses.field(default_factory=dict)
    hf_token: str | None = None
    not_an_option: int = 7  # an EngineArgs field no option names: never read


def test_defaults_are_left_out_as_the_replica_leaves_out_unset_options():
    args = read_engine_args(EngineArgs(model="/m"), TABLE)
    assert dict(args.values) == {"model": "/m"} and args.model == "/m" and args.model_source == "engine"
    assert args.value("kv_cache_dtype") is None and args.value("tensor_parallel_size") is None


def test_set_values_typed_configs_as_dicts_enums_by_name_only_changed_keys():
    engine = EngineArgs(model="/m", tensor_parallel_size=2, attention_config=AttentionConfig(indexer_kv_dtype="mxfp4"),
                        attention_backend=Backend.FLASHINFER_MLA_SPARSE_DSV4,
                        speculative_config={"method": "dspark", "num_speculative_tokens": 5})
    values = read_engine_args(engine, TABLE).values
    assert values["tensor_parallel_size"] == 2
    assert values["attention_config"] == {"indexer_kv_dtype": "mxfp4"}  # as --attention-config.indexer_kv_dtype reads
    assert values["attention_backend"] == "FLASHINFER_MLA_SPARSE_DSV4"
    assert values["speculative_config"] == {"method": "dspark", "num_speculative_tokens": 5}
    assert "not_an_option" not in values


def test_callables_and_credentials_are_never_read():
    engine = EngineArgs(model="/m", hf_overrides=lambda config: config, hf_token="hf_SECRET")
    values = read_engine_args(engine, TABLE).values
    assert "hf_overrides" not in values and "hf_token" not in values


def test_no_engine_gives_only_the_model():
    args = read_engine_args(None, TABLE, "/m")
    assert dict(args.values) == {} and args.model == "/m"


def test_plain():
    assert plain((1, "a", AttentionConfig())) == [1, "a", {"backend": None, "indexer_kv_dtype": "fp8"}]
    assert plain(Backend.FLASHINFER_MLA_SPARSE_DSV4) == "FLASHINFER_MLA_SPARSE_DSV4"
