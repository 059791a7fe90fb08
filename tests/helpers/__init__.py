"""Helpers the tests share: stub servers, CLI runners, child processes, stored-run builders."""
