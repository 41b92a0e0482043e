"""The visible checks, one module per notebook. Each `check_<exercise>` prints a line per step and
fails with a message that says what was expected, what came out and, where it can, which known
mistake the output matches. Each `written_<exercise>` only confirms the exercise is written (the
visible part of its hidden-test cell)."""
from course.checks.attention import check_attention, written_attention
from course.checks.attention_block import (
    check_feed_forward,
    check_layer_norm,
    check_multi_head_attention,
    check_transformer_block,
    written_feed_forward,
    written_layer_norm,
    written_multi_head_attention,
    written_transformer_block,
)
from course.checks.masking import (
    check_causal_mask,
    check_masked_attention,
    check_padding_mask,
    written_causal_mask,
    written_masked_attention,
    written_padding_mask,
)
from course.checks.positional_encoding import (
    check_offset_rotation,
    check_positional_encoding,
    check_token_and_position_embedding,
    written_offset_rotation,
    written_positional_encoding,
    written_token_and_position_embedding,
)
from course.checks.reversal import (
    check_per_position_accuracy,
    check_reversal_batch,
    check_train_reversal,
    written_per_position_accuracy,
    written_reversal_batch,
    written_train_reversal,
)
from course.checks.shakespeare import (
    check_chunk,
    check_evaluate,
    check_learning_rate,
    check_parameter_groups,
    check_sample,
    check_tokenize,
    check_train_model,
    check_train_val_split,
    check_vocab,
    written_chunk,
    written_evaluate,
    written_learning_rate,
    written_parameter_groups,
    written_sample,
    written_tokenize,
    written_train_model,
    written_train_val_split,
    written_vocab,
)
from course.checks.transformer import (
    check_decoder_block,
    check_decoder_only_transformer,
    check_encoder_decoder_transformer,
    check_forward_with_cache,
    check_generate,
    check_generate_cached,
    written_decoder_block,
    written_decoder_only_transformer,
    written_encoder_decoder_transformer,
    written_forward_with_cache,
    written_generate,
    written_generate_cached,
)

__all__ = [
    "check_positional_encoding", "check_token_and_position_embedding",
    "written_positional_encoding", "written_token_and_position_embedding",
    "check_offset_rotation", "written_offset_rotation",
    "check_attention", "written_attention",
    "check_causal_mask", "check_padding_mask", "check_masked_attention",
    "written_causal_mask", "written_padding_mask", "written_masked_attention",
    "check_multi_head_attention", "check_layer_norm", "check_feed_forward", "check_transformer_block",
    "written_multi_head_attention", "written_layer_norm", "written_feed_forward", "written_transformer_block",
    "check_decoder_only_transformer", "check_decoder_block", "check_encoder_decoder_transformer", "check_generate",
    "written_decoder_only_transformer", "written_decoder_block", "written_encoder_decoder_transformer",
    "written_generate",
    "check_forward_with_cache", "check_generate_cached", "written_forward_with_cache", "written_generate_cached",
    "check_reversal_batch", "check_train_reversal", "check_per_position_accuracy",
    "written_reversal_batch", "written_train_reversal", "written_per_position_accuracy",
    "check_tokenize", "check_vocab", "check_chunk", "check_train_val_split", "check_evaluate", "check_sample",
    "written_tokenize", "written_vocab", "written_chunk", "written_train_val_split", "written_evaluate",
    "written_sample",
    "check_parameter_groups", "check_learning_rate", "check_train_model",
    "written_parameter_groups", "written_learning_rate", "written_train_model",
]
