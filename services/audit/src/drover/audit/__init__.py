"""Drover's audit subscriber."""
