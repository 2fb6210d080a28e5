"""Text -> 64-bit fingerprint: normalize -> tokens -> weighted features -> SimHash (and the verification sketch).

Pure computation: nothing here touches HBase or the network.
"""

from simhash_server.fingerprint.pipeline import FINGERPRINT_VERSION, Fingerprint, fingerprint
from simhash_server.fingerprint.simhash import from_hex, to_hex

__all__ = ["FINGERPRINT_VERSION", "Fingerprint", "fingerprint", "from_hex", "to_hex"]
