"""The numpy reference driver: the executable definition of SPEC §1–4."""

from .device import ReferenceBuffer, ReferenceDevice, ReferencePreparedModel

__all__ = ["ReferenceBuffer", "ReferenceDevice", "ReferencePreparedModel"]
