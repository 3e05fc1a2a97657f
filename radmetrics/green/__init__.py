"""GREEN (Ostmeier et al., 2024): clinically significant errors counted by a fine-tuned judge."""
from radmetrics.green.parse import GreenParseError, clean_response, parse_green
from radmetrics.green.prompt import PROMPT_VERSION, build_green_prompt
from radmetrics.green.system import GreenSystem

__all__ = ["GreenParseError", "GreenSystem", "PROMPT_VERSION", "build_green_prompt", "clean_response", "parse_green"]
