"""Local models: the llama.cpp server, a cache in front of a model server, and model builds."""
