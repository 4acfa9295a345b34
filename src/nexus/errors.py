"""One error tree: every failure the project raises on purpose is a NexusError."""


class NexusError(Exception):
    """Base of all Nexus errors; the message says what was wrong and what to do."""


class ConfigError(NexusError):
    """A setting names something unknown or impossible."""


class ToolLoadError(NexusError):
    """A tool source (file or server) could not be loaded; nothing from it was added."""


class ServerError(ToolLoadError):
    """A live MCP server failed to start, crashed or answered badly."""


class IndexFileError(NexusError):
    """A persisted index is corrupt or was built for another embedder/registry."""


class ModelError(NexusError):
    """A model (embedder, cross-encoder, LLM) is missing or unusable."""


class GrammarError(ModelError):
    """llama.cpp's grammar parser refused a GBNF grammar (e.g. one built from a schema whose pattern or optional
    parameters go past what the parser takes)."""


class RequestError(NexusError):
    """A request (an HTTP body, an MCP call) is malformed, too large or names something unknown: the client's
    fault (HTTP 4xx); nothing of it was applied."""

    status = 400


class UnknownToolError(RequestError):
    """A call names a tool that is not in the registry (or is quarantined): it is never forwarded."""

    status = 404


class ArgumentsError(RequestError):
    """A call's arguments do not validate against the tool's full JSON Schema: it is never forwarded."""

    status = 422
