"""Figures the notebooks draw, one module per notebook. Each takes the student's function and says so kindly
when it is not written yet."""
from course.plots.drawing import heatmap, attention_weights  # noqa: F401
from course.plots.positions import (  # noqa: F401
    show_dot_product_by_offset, show_positional_encoding, show_scores_after_projection)
from course.plots.attention import show_hard_vs_soft, show_softmax_gradient, show_attention_on_sentence  # noqa: F401
from course.plots.masking import show_padding_mask, show_causal_attention, show_fully_masked_row, show_causality  # noqa: F401
from course.plots.attention_block import (random_attention, show_attention_heads, show_block_diagram,  # noqa: F401
                                          show_head_split, show_norm_axes, compare_layer_norm_with_batch_norm)
from course.plots.transformer import (show_encoder_decoder_flow, show_teacher_forcing, show_temperature_and_top_k,  # noqa: F401
                                      train_tiny_reverser, show_cross_attention, show_cache_speed)
from course.plots.reversal import (  # noqa: F401
    compare_teacher_forced_and_generation, mirror_weights, show_ngram_baselines, show_reversal_training,
    show_trained_attention)
from course.plots.shakespeare import show_language_model_training, show_learning_rate, show_token_frequencies  # noqa: F401
