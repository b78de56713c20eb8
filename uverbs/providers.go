package uverbs

// Every provider goverbs ships is linked in, so Open("rxe0") or Open("mlx5_0") just works: users need no blank
// imports. A provider registers itself for its kernel driver id in its init function.
import (
	_ "github.com/goverbs/goverbs/providers/mlx5"
	_ "github.com/goverbs/goverbs/providers/rxe"
	_ "github.com/goverbs/goverbs/providers/siw"
)
