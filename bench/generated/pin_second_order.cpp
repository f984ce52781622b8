// Pinocchio's C++ second-order partials of inverse dynamics and a one-call td2, for Python
// (benchmark tool, built by bench/bench_generated.py against the pin wheel's headers).
//
// Robot(text): the model from Pinocchio's text serialization (Python: model.saveToString()).
// second_partials(q, v, a): ComputeRNEASecondOrderDerivatives into tensors held by the object
//   (in place, like Pinocchio's data), nothing returned; tensors() returns copies of the four.
// td2(q, rows): q (nq,) and rows (4, nv) qd, qdd, q3, q4 -> (3, nv) tau, tau', tau'' in one call:
//   tau'' = T_qq[qd, qd] + 2 T_qv[qd, qdd] + T_vv[qdd, qdd] + 2 (dM/dq . qd) q3
//           + T_q qdd + T_v q3 + M q4.
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea-second-order-derivatives.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/serialization.hpp>
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;
using Eigen::VectorXd;
using Tensor = Eigen::Tensor<double, 3>;

struct Robot {
  pinocchio::Model model;
  std::unique_ptr<pinocchio::Data> data;
  Tensor dqdq, dvdv, dqdv, dadq;
  VectorXd tmp;

  explicit Robot(const std::string &text) {
    model.loadFromString(text);
    data.reset(new pinocchio::Data(model));
    const int n = model.nv;
    for (Tensor *t : {&dqdq, &dvdv, &dqdv, &dadq}) {
      t->resize(n, n, n);
      t->setZero();
    }
    tmp.resize(n);
  }

  void second_partials(const VectorXd &q, const VectorXd &v, const VectorXd &a) {
    pinocchio::ComputeRNEASecondOrderDerivatives(model, *data, q, v, a, dqdq, dvdv, dqdv, dadq);
  }

  py::tuple tensors() const {
    const int n = model.nv;
    auto copy = [n](const Tensor &t) {
      py::array_t<double> out({n, n, n});
      auto r = out.mutable_unchecked<3>();
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          for (int k = 0; k < n; ++k) r(i, j, k) = t(i, j, k);
      return out;
    };
    return py::make_tuple(copy(dqdq), copy(dvdv), copy(dqdv), copy(dadq));
  }

  py::array_t<double> td2(const VectorXd &q,
                          py::array_t<double, py::array::c_style | py::array::forcecast> rows) {
    const int n = model.nv;
    auto J = rows.unchecked<2>();
    Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> X(
        J.data(0, 0), 4, n);
    const VectorXd v = X.row(0), a = X.row(1), q3 = X.row(2), q4 = X.row(3);
    py::array_t<double> out({3, n});
    auto O = out.mutable_unchecked<2>();
    const VectorXd tau = pinocchio::rnea(model, *data, q, v, a);
    pinocchio::computeRNEADerivatives(model, *data, q, v, a);
    data->M.triangularView<Eigen::StrictlyLower>() =
        data->M.transpose().triangularView<Eigen::StrictlyLower>();
    const VectorXd td = data->dtau_dq * v + data->dtau_dv * a + data->M * q3;
    VectorXd tdd = data->dtau_dq * a + data->dtau_dv * q3 + data->M * q4;
    pinocchio::ComputeRNEASecondOrderDerivatives(model, *data, q, v, a, dqdq, dvdv, dqdv, dadq);
    for (int i = 0; i < n; ++i) {
      double s = 0.0;
      for (int j = 0; j < n; ++j)
        for (int k = 0; k < n; ++k)
          s += dqdq(i, j, k) * v[j] * v[k] + 2.0 * dqdv(i, j, k) * v[j] * a[k] +
               dvdv(i, j, k) * a[j] * a[k] + 2.0 * dadq(i, j, k) * q3[j] * v[k];
      tdd[i] += s;
    }
    for (int i = 0; i < n; ++i) {
      O(0, i) = tau[i];
      O(1, i) = td[i];
      O(2, i) = tdd[i];
    }
    return out;
  }
};

PYBIND11_MODULE(pin_second_order, m) {
  py::class_<Robot>(m, "Robot")
      .def(py::init<const std::string &>())
      .def_property_readonly("nv", [](const Robot &r) { return r.model.nv; })
      .def("joint_v_index", [](const Robot &r, const std::string &name) {
        return r.model.joints[r.model.getJointId(name)].idx_v();
      })
      .def("second_partials", &Robot::second_partials)
      .def("tensors", &Robot::tensors)
      .def("td2", &Robot::td2);
}
