"""The Acme example driver: float32 ADD, MUL and RELU computed with numpy, written against the
Driver API alone (`harness.api.hal`), with no code of the harness's reference driver."""

from acme_driver.device import AcmeDevice

__all__ = ["AcmeDevice"]
