"""The dialects that are data: each row a format's description in the vocabulary a routes file
writes a model's own format in (`streaming/described_format.py`), registered by name. The
formats whose reading needs code of its own keep a module of their own beside this table.
docs/protocols.md's dialect table lists these rows; a test holds the two to one list.

Each row's comment says who writes it and what it was checked against."""

from __future__ import annotations

from typing import Any

from ..streaming.described_format import register_described

DEEPSEEK_CALLS = "<｜tool▁calls▁begin｜> "
KIMI_SECTIONS = ("<|tool_calls_section_begin|>", "<|tool_call_section_begin|>")
KIMI_CALL = "<|tool_call_begin|> {name}:{id} <|tool_call_argument_begin|>"
HARMONY_CHANNEL = "<|channel|>commentary"
# What may come between the recipient and the message: the content type, constrained.
HARMONY_MESSAGE = "{?<|constrain|>} {?json} <|message|>"
IFM_KEY_OPEN = "<ifm|arg_key>"
IFM_KEY = f"{IFM_KEY_OPEN}{{key}}</ifm|arg_key>"
IFM_VALUE = "<ifm|arg_value>{value}</ifm|arg_value>"
PLAMO_REQUEST = (
    "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{name}"
    "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>"
)

TABLE: dict[str, dict[str, Any]] = {
    # IBM Granite 3.0 (a list) and Phi-4-mini (one object, closed) after `<|tool_call|>`.
    # vLLM `granite`, Phi-4-mini's chat template. Granite 3.1's `<tool_call>[...]` is hermes.
    "granite": {"open": "<|tool_call|>", "arguments": "json", "close": "<|/tool_call|>"},
    # Llama 3.x: `{"name", "parameters"}` objects after `<|python_tag|>`, `;` between several.
    # Llama 3.1's chat template, vLLM `llama3_json`.
    "llama3": {
        "open": "<|python_tag|>",
        "arguments": "json",
        "close": ["<|eom_id|>", "<|eot_id|>"],
    },
    # Cohere Command A and R7B: `{"tool_call_id", "tool_name", "parameters"}` in an action.
    # SGLang `cohere_command4`.
    "cohere": {"open": "<|START_ACTION|>", "arguments": "json", "close": "<|END_ACTION|>"},
    # Mistral: a list of call objects (tokenizers before v11), or the name and its arguments,
    # `[ARGS]` between (v11 on; a `[CALL_ID]` may come first). Mistral Small 3.2's and
    # Ministral's templates, vLLM `mistral`.
    "mistral": {
        "arguments": "json",
        "forms": [
            {"open": "[TOOL_CALLS]", "begins": "["},
            {"open": ["[TOOL_CALLS] {name}{?[CALL_ID]{id}}[ARGS]", "[TOOL_CALLS] {name}"]},
        ],
    },
    # DeepSeek V3 and R1 (`function`, the name, the JSON in a fence) and V3.1 (the name, the
    # JSON), each in a section or alone. DeepSeek-R1's and V3.1's templates, vLLM
    # `deepseek_v3` and `deepseek_v31`.
    "deepseek": {
        "open": [
            f"{DEEPSEEK_CALLS}<｜tool▁call▁begin｜>function<｜tool▁sep｜>{{name}}",
            f"{DEEPSEEK_CALLS}<｜tool▁call▁begin｜>{{name}}<｜tool▁sep｜>",
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}",
            "<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>",
        ],
        "arguments": "json",
        "close": "<｜tool▁call▁end｜>",
        "section_close": "<｜tool▁calls▁end｜>",
    },
    # Kimi K2: an id `functions.<name>:<index>`, then the JSON; the section tokens also
    # spelled `tool_call_section`. Kimi-K2-Thinking's template, vLLM `kimi_k2`.
    "kimi-k2": {
        "open": [
            *(f"{section} {KIMI_CALL}" for section in KIMI_SECTIONS),
            KIMI_CALL,
        ],
        "arguments": "json",
        "close": "<|tool_call_end|>",
        "section_close": ["<|tool_calls_section_end|>", "<|tool_call_section_end|>"],
    },
    # gpt-oss (OpenAI Harmony) as text: a message to `functions.<name>` on the commentary
    # channel, the recipient after the channel or in the role. OpenAI's Harmony guide,
    # sglang `gpt_oss`.
    "harmony": {
        "open": [
            f"{HARMONY_CHANNEL} to={{name}} {HARMONY_MESSAGE}",
            f"<|start|>assistant{HARMONY_CHANNEL} to={{name}} {HARMONY_MESSAGE}",
            f"<|start|>assistant to={{name}} {HARMONY_CHANNEL} {HARMONY_MESSAGE}",
        ],
        "arguments": "json",
        "close": ["<|call|>", "<|end|>"],
    },
    # Gemma 3: Python calls in a ```tool_code block. Google's Gemma function-calling guides.
    "gemma": {"open": "```tool_code\n", "arguments": "python", "close": "```"},
    # LFM2 and Llama 4 (whose end may be missing): a Python list of calls, or a JSON array.
    # vLLM and SGLang `lfm2`, vLLM `llama4_pythonic`.
    "python-list": {
        "arguments": "python-list",
        "forms": [
            {"open": "<|tool_call_start|>", "close": "<|tool_call_end|>"},
            {
                "open": "<|python_start|>",
                "close": ["<|python_end|>", "<|eom|>", "<|eot|>"],
                "close_optional": True,
            },
        ],
    },
    # Gemma 4 and FunctionGemma: `call:name{key:value,...}`, strings between `<|"|>` (or
    # `<escape>`). SGLang `gemma4`, vLLM `gemma4` and `functiongemma`.
    "gemma4": {
        "arguments": "tagged-values",
        "call": "call:{name}{arguments}",
        "forms": [
            {"open": "<|tool_call>", "close": "<tool_call|>", "quote": '<|"|>'},
            {"open": "<start_function_call>", "close": "<end_function_call>", "quote": "<escape>"},
        ],
    },
    # ByteDance Seed-OSS: Qwen3-Coder's `<function=...>` calls in `<seed:tool_call>`, values
    # less a line break after the open tag and one before the close. vLLM `seed_oss`.
    "seed-oss": {
        "open": "<seed:tool_call>",
        "close": "</seed:tool_call>",
        "arguments": "key-value",
        "call": "<function={name}>{arguments}</function>",
        "key_value": "<parameter={key}>{value}</parameter>",
        "value": "lines",
    },
    # StepFun Step3: `steptml:invoke`s in a section of full-width-bar tokens, values stripped.
    # vLLM's and SGLang's `step3`.
    "step3": {
        "open": "<｜tool_calls_begin｜>",
        "close": "<｜tool_calls_end｜>",
        "arguments": "key-value",
        "call": '<｜tool_call_begin｜> function <｜tool_sep｜> <steptml:invoke name="{name}">'
        "{arguments}</steptml:invoke> {?<｜tool_call_end｜>}",
        "key_value": '<steptml:parameter name="{key}">{value}</steptml:parameter>',
        "value": "stripped",
    },
    # Tencent Hunyuan: a JSON array (A13B), or GLM-like key and value tags after the name and
    # `<tool_sep>` (HY3). vLLM `hunyuan_a13b`, SGLang `hunyuan`.
    "hunyuan": {
        "open": "<tool_calls>",
        "close": "</tool_calls>",
        "json_calls": True,
        "arguments": "key-value",
        "call": "<tool_call>{name}<tool_sep>{arguments}</tool_call>",
        "key_value": "<arg_key>{key}</arg_key> <arg_value>{value}</arg_value>",
    },
    # GigaChat 3.5: DSML's section of invokes under another bar word, a parameter's value JSON
    # where it says `string="false"`. vLLM and SGLang `gigachat35`.
    "gigachat": {
        "open": "<｜GCML｜tool_calls>",
        "close": "</｜GCML｜tool_calls>",
        "arguments": "key-value",
        "call": '<｜GCML｜invoke name="{name}">{arguments}</｜GCML｜invoke>',
        "key_value": '<｜GCML｜parameter name="{key}"{? string="{type}"}>{value}'
        "</｜GCML｜parameter>",
    },
    # K2-v3 and K2 Horizon: GLM-like key and value tags (a type tag between them, or none) or a
    # JSON call object in each call, the calls in a group or alone. vLLM `k2_horizon`, SGLang
    # `k2_v3`.
    "k2-horizon": {
        "arguments": "key-value",
        "key_value": f"{IFM_KEY} {{?<ifm|arg_type>{{type}}</ifm|arg_type>}} {IFM_VALUE}",
        "json_calls": True,
        "forms": [
            {
                "open": "<ifm|tool_calls>",
                "close": "</ifm|tool_calls>",
                "call": "<ifm|tool_call>{name}{arguments}</ifm|tool_call>",
            },
            {
                "open": "<ifm|tool_call> {name}",
                "begins": [IFM_KEY_OPEN, "</ifm|tool_call>"],
                "close": "</ifm|tool_call>",
            },
        ],
    },
    # XingChen4 (TeleChat4's Xing4.0 template): the name after `<tool_call>` as GLM writes it,
    # `<param_key>` and `<param_value>` tags after it. ms-swift's `Xing4_0AgentTemplate`.
    "xingchen": {
        "open": "<tool_call> {name}",
        "begins": "<param_key>",
        "close": "</tool_call>",
        "arguments": "key-value",
        "key_value": "<param_key>{key}</param_key> <param_value>{value}</param_value>",
    },
    # PLaMo 3: each request a name and JSON arguments between tags of their own, in a group.
    # vLLM `plamo3`.
    "plamo": {
        "open": [
            f"<|plamo:begin_tool_requests:plamo|> {PLAMO_REQUEST}",
            PLAMO_REQUEST,
        ],
        "arguments": "json",
        "close": "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>",
        "section_close": "<|plamo:end_tool_requests:plamo|>",
    },
    # Apertus: a JSON array of objects that name their tool by their one key. SGLang
    # `apertus2509`.
    "apertus": {
        "open": "<|tools_prefix|>",
        "arguments": "json",
        "call_objects": "keyed",
        "close": "<|tools_suffix|>",
    },
    # LongCat Flash Chat: Hermes' call objects in tags of its own. SGLang `longcat`.
    "longcat": {
        "open": "<longcat_tool_call>",
        "arguments": "json",
        "close": "</longcat_tool_call>",
    },
    # dots.llm: `<invoke>`s as Claude and MiniMax write them, or one JSON call object, in a
    # block of its own. SGLang `dots`.
    "dots": {
        "open": "<dots_function_call>",
        "close": "</dots_function_call>",
        "arguments": "key-value",
        "json_calls": True,
        "call": '<invoke name="{name}">{arguments}</invoke>',
        "key_value": '<parameter name="{key}">{value}</parameter>',
    },
    # Intern-S1 and InternLM2: a JSON call object in an action of the plugin. vLLM
    # `intern_s1`, `internlm2`.
    "intern-s1": {
        "open": "<|action_start|> <|plugin|>",
        "arguments": "json",
        "close": "<|action_end|>",
    },
    # Nemotron: a JSON array of call objects. vLLM `nemotron_json`.
    "nemotron": {"open": "<TOOLCALL>", "arguments": "json", "close": "</TOOLCALL>"},
    # Sarashina: a list of call objects in Python literals after its token, ended by the list.
    # SMG `sarashina`.
    "sarashina": {"open": "<|tool_calls|>", "arguments": "json", "begins": "["},
    # MiniCPM-4: the tool named in the function's tag, each argument a parameter element (CDATA
    # for text with markup). SGLang `minicpm4_xml`.
    "minicpm4": {
        "open": '<function name="{name}">',
        "arguments": "key-value",
        "key_value": '<param name="{key}">{value}</param>',
        "value": "xml",
        "close": "</function>",
    },
    # IQuest Q1 and Coder V2: GLM's key and value tags under tags of their own. SGLang
    # `iquest_q1`, vLLM `iquest_coder_v2`.
    "iquest": {
        "arguments": "key-value",
        "key_value": "<arg_key>{key}</arg_key> <arg_value>{value}</arg_value>",
        "forms": [
            {
                "open": f"<{tag}> {{name}}",
                "begins": ["<arg_key>", f"</{tag}>"],
                "close": f"</{tag}>",
            }
            for tag in ("iquest_tool_call", "iquestcoder_tool_call")
        ],
    },
    # MiroThinker: Cline's and Roo Code's MCP call, the tool under its server (`server__tool`
    # where declared so). MiroFlow's prompts, Roo Code's `use_mcp_tool`.
    "mirothinker": {
        "open": "<use_mcp_tool>",
        "close": "</use_mcp_tool>",
        "arguments": "json",
        "call": "<server_name>{server}</server_name> <tool_name>{name}</tool_name> "
        "<arguments>{arguments}</arguments>",
    },
}

for _name, _description in TABLE.items():
    register_described(_name, _description)
