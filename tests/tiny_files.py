"""Tiny instance files shared by several test modules (imported as `tests.tiny_files`)."""

# A CVRPLIB file: depot and 6 customers on integer coordinates, EUC_2D, capacity 10.
TINY6_VRP = """NAME : tiny6
TYPE : CVRP
DIMENSION : 7
EDGE_WEIGHT_TYPE : EUC_2D
CAPACITY : 10
NODE_COORD_SECTION
1 50 50
2 10 10
3 20 90
4 80 80
5 90 20
6 30 40
7 70 60
DEMAND_SECTION
1 0
2 4
3 5
4 3
5 6
6 4
7 2
DEPOT_SECTION
1
-1
EOF
"""
