"""BFCL's call-text decoders: a model's reply as Python, Java or JavaScript call syntax, decoded as BFCL does."""
