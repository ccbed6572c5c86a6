
,
xPlaceholder*
dtype0*
shape:

SquareSquarex*
T0
#
Square_1SquareSquare*
T0"ª*l
4/work/wt-graphdef-fuzz/tests/fuzz/graph_def_seeds.py
Square
$"<lambda>
Square_1
$"<lambda>