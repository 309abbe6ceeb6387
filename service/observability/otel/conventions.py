"""The attribute, event and metric names the proxy's telemetry uses: OpenTelemetry's HTTP and
GenAI semantic conventions (as of the GenAI conventions' development release that names
`gen_ai.provider.name` and `gen_ai.response.time_to_first_chunk`), and the proxy's own story
under `toolcall_proxy.`."""

from __future__ import annotations

# HTTP and network (stable conventions).
HTTP_METHOD = "http.request.method"
HTTP_ROUTE = "http.route"
HTTP_STATUS = "http.response.status_code"
URL_PATH = "url.path"
URL_SCHEME = "url.scheme"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
CLIENT_ADDRESS = "client.address"
USER_AGENT = "user_agent.original"
ERROR_TYPE = "error.type"

# GenAI.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOKEN_TYPE = "gen_ai.token.type"
OPERATION_DURATION = "gen_ai.client.operation.duration"
TOKEN_USAGE = "gen_ai.client.token.usage"
# The upstream speaks OpenAI's API, whatever server runs behind it (vLLM, llama.cpp...).
UPSTREAM_PROVIDER = "openai"

# The proxy's own story.
PREFIX = "toolcall_proxy."
ROUTE = PREFIX + "route"
REQUEST_ID = PREFIX + "request_id"
PROTOCOL = PREFIX + "protocol"
CALLS_PARSED = PREFIX + "calls.parsed"
CALLS_RESCUED = PREFIX + "calls.rescued"
CALLS_REPAIRED = PREFIX + "calls.repaired"
CALLS_DROPPED = PREFIX + "calls.dropped"
CALLS_INVALID = PREFIX + "calls.invalid"
CALLS_ASKED_AGAIN = PREFIX + "calls.asked_again"
FORCED_CALL_ASKED_AGAIN = PREFIX + "forced_call.asked_again"
PARSE_ERRORS = PREFIX + "parse_errors"
PARSE_ERROR_KINDS = PREFIX + "parse_error.kinds"
PARSE_ERROR_KIND = PREFIX + "parse_error.kind"
PARSE_ERROR_MESSAGE = PREFIX + "parse_error.message"
PARSE_ERROR_ORIGINAL = PREFIX + "parse_error.original"
HOSTED_TOOLS_DROPPED = PREFIX + "hosted_tools.dropped"
TIME_TO_FIRST_BYTE = PREFIX + "time_to_first_byte"
CLIENT_DISCONNECTED = PREFIX + "client_disconnected"
UPSTREAM_REQUESTS = PREFIX + "upstream.requests"
UPSTREAM_ATTEMPT = PREFIX + "upstream.attempt"
UPSTREAM_ABANDONED = PREFIX + "upstream.abandoned"

# Events on the server span, one per happening, in the order they happened.
TOOL_CALL_EVENT = PREFIX + "tool_call"
PARSE_ERROR_EVENT = PREFIX + "parse_error"
RESCUED_CALL_EVENT = PREFIX + "call_rescued"
DROPPED_CALL_EVENT = PREFIX + "call_dropped"
ASKED_AGAIN_EVENT = PREFIX + "forced_call_asked_again"
INVALID_CALL_EVENT = PREFIX + "call_invalid"
REPAIRED_CALL_EVENT = PREFIX + "call_repaired"
CALLS_ASKED_AGAIN_EVENT = PREFIX + "calls_asked_again"
INVALID_CALL_PROBLEM = PREFIX + "call.problem"
HOSTED_TOOLS_EVENT = PREFIX + "hosted_tools_dropped"
