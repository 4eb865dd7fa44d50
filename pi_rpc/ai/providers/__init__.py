"""Built-in providers, one module per API; each declares a `PROVIDER` (`pi_rpc/ai/provider.py`),
and `pi_rpc/ai/registry.py` lists them."""
