/* mlp.h: a two-layer perceptron classifier, in plain C: x -> ReLU(W1 x + b1) -> W2 h + b2 ->
 * softmax, trained on the cross-entropy loss by SGD with momentum.
 *
 * Every parameter lives in one float array (W1, b1, W2, b2, row-major), and so does a gradient:
 * one buffer is what a data-parallel step hands to tern_allreduce, and what the ranks compare to
 * prove they hold the same model.
 */
#ifndef TRAIN_MLP_H
#define TRAIN_MLP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mlp {
  int in, hidden, out;
  size_t nparams;
  float *w;   /* nparams: W1 (hidden x in), b1 (hidden), W2 (out x hidden), b2 (out) */
  float *vel; /* nparams: the momentum buffer */
  float *h;   /* hidden: scratch for one sample's hidden layer */
  float *z;   /* out: scratch for one sample's logits, then probabilities */
} mlp;

/* Allocates a model of the given shape, weights zero. -1 on a bad shape or no memory. */
int mlp_init(mlp *m, int in, int hidden, int out);
void mlp_free(mlp *m);
/* He initialisation (He et al., "Delving deep into rectifiers", ICCV 2015): weights uniform with
 * variance 2 / fan_in, biases zero; the same weights for the same seed on any machine. */
void mlp_randomize(mlp *m, uint64_t seed);

/* Forward pass on one sample: returns the predicted class; *loss gets the cross-entropy for
 * label (when loss is not NULL). Leaves the probabilities in m->z. */
int mlp_forward(mlp *m, const float *x, int label, float *loss);
/* Forward and backward on one sample: adds the gradient of its loss to g (nparams floats) and
 * returns the loss; *correct is 1 when the prediction was right. */
float mlp_backprop(mlp *m, const float *x, int label, float *g, int *correct);
/* One SGD step with momentum on the gradient g scaled by scale (1 / batch): vel = momentum vel
 * + scale g; w -= lr vel. */
void mlp_step(mlp *m, const float *g, float scale, float lr, float momentum);

#endif
