"""The chat formats a conversation (an item's ``messages``) can be rendered in.

``doit``: the study's speaker tokens and template; ``native``: the base's own chat template.
``doit.models.chat`` renders them; the names live here, in the data layer, so that reading a
grid or a recipe's flags names them without importing the model code (torch, transformers).
"""

CHAT_FORMATS = ("doit", "native")
