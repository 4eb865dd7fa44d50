"""Built-in providers, one module per API; each declares a `PROVIDER` (`pi_rpc/ai/provider.py`),
and its API's declaration (`pi_rpc/ai/apis.py`) names the module for the registry."""
