"""torch._dynamo.exc: the exceptions of ferrograd.compile, with torch's names and bases."""

__all__ = ["TorchDynamoException", "Unsupported", "InvalidBackend", "RecompileError", "BackendCompilerFailed",
           "InternalTorchDynamoError"]


class TorchDynamoException(RuntimeError):
    pass


class Unsupported(TorchDynamoException):
    """A graph break where `fullgraph=True` asked for one graph."""


class InvalidBackend(TorchDynamoException):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}. See `torch._dynamo.list_backends()` for available backends.")


class RecompileError(TorchDynamoException):
    """A recompile while `config.error_on_recompile` is set."""


class BackendCompilerFailed(TorchDynamoException):
    pass


class InternalTorchDynamoError(TorchDynamoException):
    pass
