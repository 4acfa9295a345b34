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
