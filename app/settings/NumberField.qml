import QtQuick
import QtQuick.Controls

// A decimal number entry in [0, maximum]; emits numberEdited() with the parsed number.
TextField {
    id: root
    property real number
    property real maximum: 1
    signal numberEdited(real number)

    text: Number(number).toLocaleString(Qt.locale("C"), "f", 2)
    validator: DoubleValidator { bottom: 0; top: root.maximum; decimals: 3; locale: "C" }
    inputMethodHints: Qt.ImhFormattedNumbersOnly
    onEditingFinished: if (acceptableInput) root.numberEdited(Number.fromLocaleString(Qt.locale("C"), text))
}
